import type { Checkpoint, Leaf } from '../domain/ledger/checkpoints.js';
import type { AppPage, AppRead } from '../storage/ledger/app-pages.js';
import type {
  BatchPuts,
  FirstAttemptRecord,
  FirstAttemptsCommit,
  RecordAttempt,
  RecordResult,
} from '../storage/ledger/attempts.js';
import type { Change } from '../storage/ledger/changes.js';
import type {
  ExportedCheckpoint,
  PeriodPointer,
  WriteResult,
} from '../storage/ledger/checkpoint-store.js';
import type {
  AttemptEntry,
  DispatchState,
  NewDispatchInput,
  Unstamped,
} from '../storage/ledger/dispatches.js';
import type { GaugeTotals } from '../storage/ledger/flag-entries.js';
import type { ComplianceResult, ComplianceWrite } from '../storage/ledger/postbacks.js';
import type { ComplianceState } from '../storage/ledger/summary.js';
import type { DueEntry } from '../storage/timers/due.js';

/**
 * The dispatch ledger as the workers and services use it: dispatches and their attempts,
 * postbacks and flags, listings, redaction and checkpoints. The store behind it owns keys,
 * item shapes, conditions and how a refused write is read (shared/storage/ledger/, `DynamoLedger`).
 * Dispatch items are returned raw (`Record<string, unknown>`, unpacked) where the ledger's pure
 * readers (queries.ts, evidence.ts, seal.ts) turn them into entries.
 */
export interface Ledger {
  // Dispatches and attempts (workers/dispatcher).
  /** Writes a new dispatch with its due entry; `duplicate` (nothing written) when it exists. */
  createDispatch(
    o: NewDispatchInput,
  ): Promise<{ result: 'recorded' | 'duplicate'; state: DispatchState }>;
  /** Appends the dispatch's next attempt and moves (or removes) its due entry. */
  recordAttempt(r: RecordAttempt): Promise<{ result: RecordResult; entry: AttemptEntry }>;
  /** Attempt 1 and the dispatch it creates, as one record, not yet written. */
  firstAttemptRecord(
    r: Omit<RecordAttempt, 'state'> & { state: DispatchState; nowMs: number },
  ): FirstAttemptRecord;
  /** The batched writes that land first-attempt records, in the order they must land. */
  firstAttemptPhases(
    recs: readonly FirstAttemptRecord[],
    stamp: (rec: FirstAttemptRecord) => boolean,
  ): BatchPuts[];
  /** Writes one batch; resolves to what the store left unprocessed. */
  writeBatch(puts: BatchPuts): Promise<BatchPuts>;
  /** Writes first-attempt records in one transaction. */
  commitFirstAttempts(
    recs: readonly FirstAttemptRecord[],
    requestToken?: string,
  ): Promise<FirstAttemptsCommit>;
  getDispatchState(dispatchId: string): Promise<DispatchState | undefined>;
  /** Which of these dispatches exist, with what `stampLate` needs. */
  recordedDispatches(ids: string[]): Promise<Map<string, Unstamped & { stamped: boolean }>>;
  /** Stamps dispatches that landed without a change stamp; resolves to how many were. */
  stampLate(items: readonly Unstamped[], nowMs: number): Promise<number>;

  // The due entries of dispatches (the dispatcher's sweeper, operators' re-queue).
  listDispatchDue(bucket: number, shard: number, nowMs: number, limit: number): Promise<DueEntry[]>;
  moveDispatchDue(
    from: DueEntry,
    to: DueEntry,
    attempts?: number,
    snoozed?: boolean,
  ): Promise<boolean>;
  detachDispatchDue(dispatchId: string, dueSk: string): Promise<void>;
  /** Makes a dispatch due now with a `manual` entry; undefined for an unknown dispatch. */
  markDueNow(dispatchId: string, nowMs: number): Promise<DispatchState | undefined>;

  // Reads (services/ledger, services/console, queries.ts, export.ts).
  /** A dispatch's items: the dispatch item first, then its entries in order. */
  dispatchItems(dispatchId: string): Promise<Record<string, unknown>[]>;
  /** A page of an app's dispatches, in event time. */
  readAppDispatches(r: AppRead): Promise<AppPage>;
  /** A principal's dispatches (as listed), in event time. */
  principalDispatches(appId: string, referenceId: string): Promise<Record<string, unknown>[]>;

  // Postbacks, flags and summaries (workers/compliance).
  writeCompliance(w: ComplianceWrite): Promise<ComplianceResult>;
  readComplianceState(dispatchId: string): Promise<ComplianceState | undefined>;
  readGauges(): Promise<GaugeTotals>;

  /** Replaces the bodies of a principal's dispatches by their redacted form; how many were. */
  redactDispatchBodies(appId: string, referenceId: string, now: Date): Promise<number>;

  // Checkpoints (workers/checkpoints, seal.ts; services/ledger).
  chainHead(appId: string): Promise<Checkpoint | undefined>;
  getCheckpoint(appId: string, seq: number): Promise<Checkpoint | undefined>;
  pointerAt(appId: string, at: string): Promise<PeriodPointer | undefined>;
  readLeaves(appId: string, periodStart: string, root: string): Promise<Leaf[]>;
  writeCheckpoint(cp: Checkpoint, leaves: readonly Leaf[]): Promise<WriteResult>;
  registeredApps(): Promise<string[]>;
  scanMark(): Promise<string | undefined>;
  setScanMark(through: string): Promise<void>;
  changesIn(from: string, to: string): Promise<Change[]>;
  currentLeaves(appId: string, start: string, end: string): Promise<Leaf[]>;
  firstDispatchAt(appId: string): Promise<string | undefined>;
  checkpointsFor(appId: string, from: string, to: string): Promise<ExportedCheckpoint[]>;
}

/** What the ledger's readers (queries.ts, export.ts) take: a caller's runtime passes as it is. */
export interface WithLedger {
  ledger: Ledger;
}
