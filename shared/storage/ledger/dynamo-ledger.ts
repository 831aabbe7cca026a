import type { LedgerDeps } from './deps.js';
import { readAppDispatches, type AppRead } from './app-pages.js';
import {
  commitFirstAttempts,
  firstAttemptPhases,
  firstAttemptRecord,
  recordAttempt,
  writeBatch,
  type BatchPuts,
  type FirstAttemptRecord,
  type RecordAttempt,
} from './attempts.js';
import * as checkpoints from './checkpoint-store.js';
import { listDispatchDue } from './dispatch-due.js';
import {
  createDispatch,
  detachDispatchDue,
  dispatchItems,
  getDispatchState,
  moveDispatchDue,
  recordedDispatches,
  stampLate,
  type DispatchState,
  type NewDispatchInput,
  type Unstamped,
} from './dispatches.js';
import { markDueNow } from './due-now.js';
import { readGauges } from './flag-entries.js';
import { writeCompliance, type ComplianceWrite } from './postbacks.js';
import { principalDispatches } from './principal.js';
import { redactDispatchBodies } from './redact.js';
import { readComplianceState } from './summary.js';
import type { Checkpoint, Leaf } from '../../domain/ledger/checkpoints.js';
import type { DueEntry } from '../timers/due.js';

/**
 * The ledger on DynamoDB (the `ledger`, `checkpoints` and `timers` tables): each method is the
 * store function of the same name (its file documents keys, items and conditions) on these deps.
 * It fits shared/ledger/port.ts's `Ledger`, which the runtime checks where it builds one.
 */
export class DynamoLedger {
  constructor(private readonly db: LedgerDeps) {}

  createDispatch(o: NewDispatchInput) {
    return createDispatch(this.db, o);
  }
  recordAttempt(r: RecordAttempt) {
    return recordAttempt(this.db, r);
  }
  firstAttemptRecord(r: Omit<RecordAttempt, 'state'> & { state: DispatchState; nowMs: number }) {
    return firstAttemptRecord(this.db, r);
  }
  firstAttemptPhases(
    recs: readonly FirstAttemptRecord[],
    stamp: (rec: FirstAttemptRecord) => boolean,
  ) {
    return firstAttemptPhases(this.db, recs, stamp);
  }
  writeBatch(puts: BatchPuts) {
    return writeBatch(this.db, puts);
  }
  commitFirstAttempts(recs: readonly FirstAttemptRecord[], requestToken?: string) {
    return commitFirstAttempts(this.db, recs, requestToken);
  }
  getDispatchState(dispatchId: string) {
    return getDispatchState(this.db, dispatchId);
  }
  recordedDispatches(ids: string[]) {
    return recordedDispatches(this.db, ids);
  }
  stampLate(items: readonly Unstamped[], nowMs: number) {
    return stampLate(this.db, items, nowMs);
  }

  listDispatchDue(bucket: number, shard: number, nowMs: number, limit: number) {
    return listDispatchDue(this.db, bucket, shard, nowMs, limit);
  }
  moveDispatchDue(from: DueEntry, to: DueEntry, attempts?: number, snoozed?: boolean) {
    return moveDispatchDue(this.db, from, to, attempts, snoozed);
  }
  detachDispatchDue(dispatchId: string, dueSk: string) {
    return detachDispatchDue(this.db, dispatchId, dueSk);
  }
  markDueNow(dispatchId: string, nowMs: number) {
    return markDueNow(this.db, dispatchId, nowMs);
  }

  dispatchItems(dispatchId: string) {
    return dispatchItems(this.db, dispatchId);
  }
  readAppDispatches(r: AppRead) {
    return readAppDispatches(this.db, r);
  }
  principalDispatches(appId: string, referenceId: string) {
    return principalDispatches(this.db, appId, referenceId);
  }

  writeCompliance(w: ComplianceWrite) {
    return writeCompliance(this.db, w);
  }
  readComplianceState(dispatchId: string) {
    return readComplianceState(this.db, dispatchId);
  }
  readGauges() {
    return readGauges(this.db);
  }
  redactDispatchBodies(appId: string, referenceId: string, now: Date) {
    return redactDispatchBodies(this.db, appId, referenceId, now);
  }

  chainHead(appId: string) {
    return checkpoints.chainHead(this.db, appId);
  }
  getCheckpoint(appId: string, seq: number) {
    return checkpoints.getCheckpoint(this.db, appId, seq);
  }
  pointerAt(appId: string, at: string) {
    return checkpoints.pointerAt(this.db, appId, at);
  }
  readLeaves(appId: string, periodStart: string, root: string) {
    return checkpoints.readLeaves(this.db, appId, periodStart, root);
  }
  writeCheckpoint(cp: Checkpoint, leaves: readonly Leaf[]) {
    return checkpoints.writeCheckpoint(this.db, cp, leaves);
  }
  registeredApps() {
    return checkpoints.registeredApps(this.db);
  }
  scanMark() {
    return checkpoints.scanMark(this.db);
  }
  setScanMark(through: string) {
    return checkpoints.setScanMark(this.db, through);
  }
  changesIn(from: string, to: string) {
    return checkpoints.changesIn(this.db, from, to);
  }
  currentLeaves(appId: string, start: string, end: string) {
    return checkpoints.currentLeaves(this.db, appId, start, end);
  }
  firstDispatchAt(appId: string) {
    return checkpoints.firstDispatchAt(this.db, appId);
  }
  checkpointsFor(appId: string, from: string, to: string) {
    return checkpoints.checkpointsFor(this.db, appId, from, to);
  }
}
