import type { App } from '../types.js';
import type { ConsentEvent } from './events.js';
import type {
  RecordChange,
  StoredClaim,
  StoredPrincipal,
  StoredTransaction,
  UserPointer,
} from './model.js';

/**
 * The consent store as the domain sees it: principals, transactions and users' claims, read by
 * id, by user and by referenceId, and written with the events each write emits, atomically. The
 * DynamoDB adapter (shared/storage/consents/store.ts) owns keys, conditions, packing and how a
 * refused write's reasons map to the outcomes below.
 */
export interface ConsentStore {
  /** The principal at a referenceId (a user's claim there is not one). */
  loadPrincipal(appId: string, referenceId: string): Promise<StoredPrincipal | undefined>;
  /** Whatever holds a principal's referenceId: a principal, or a user's claim (`claimOf`). */
  loadPrincipalKey(
    appId: string,
    referenceId: string,
  ): Promise<(StoredPrincipal & Partial<StoredClaim>) | undefined>;
  /** The referenceId a user id is first offered in the app (ids.ts, `derivedReferenceId`). */
  derivedReferenceOf(appId: string, userId: string): Promise<string>;
  /** The user's claim, with its principal when the lookup read it on the way. */
  findUser(
    appId: string,
    userId: string,
  ): Promise<{ user: UserPointer; principal?: StoredPrincipal } | undefined>;
  /** By id alone: the id names its principal. */
  loadTransaction(appId: string, transactionId: string): Promise<StoredTransaction | undefined>;
  loadTransactionAt(
    appId: string,
    referenceId: string,
    transactionId: string,
  ): Promise<StoredTransaction | undefined>;
  /** The transaction and principal of a record, by the record's id. */
  loadRecordPointer(
    appId: string,
    recordId: string,
  ): Promise<{ transactionId: string; referenceId: string } | undefined>;
  /** One page of a principal's transactions, newest first; a foreign cursor is 422. */
  listTransactions(
    appId: string,
    referenceId: string,
    limit: number,
    cursor?: string,
  ): Promise<{ items: StoredTransaction[]; nextCursor: string | null }>;
  allTransactionIds(appId: string, referenceId: string): Promise<string[]>;

  /** A new principal with its first transaction (and the user's claim, with a user). */
  createFirst(w: FirstWrite): Promise<CreateOutcome>;
  /** A new transaction of an existing principal, recording the principal's activity. */
  addTransaction(w: NewTransactionWrite): Promise<'ok' | 'no-principal' | 'contention'>;
  /** `next` in place of `current`, if `current.version` is still the stored one. */
  change(w: ChangeWrite): Promise<ChangeOutcome>;
}

/**
 * What a write schedules beside its change: the app's timer rules (validity window, inactivity,
 * scrub after erasure) applied by the store to the transaction it writes (timers.ts).
 */
export interface TimerContext {
  app: Pick<App, 'slaTimeScale' | 'inactivityErasureDays'>;
  nowMs: number;
  /** A new transaction's reminder lead time (default 30 days). */
  reminderDaysBefore?: number | undefined;
}

/** What every write carries: its events, and whether the caller still waits for it. */
interface Write {
  events: ConsentEvent[];
  /**
   * The events are exactly those the new transaction implies (carried.ts, `creationEvents`),
   * so the store may rebuild them from the transaction instead of storing them.
   */
  implied?: boolean;
  timers: TimerContext;
  /** Aborted: the write is not sent (nobody waits for its outcome); 503, nothing applied. */
  signal?: AbortSignal | undefined;
}

export interface NewTransactionWrite extends Write {
  /** The new transaction, version 1, as created (`createdBy`, `environment`). */
  txn: StoredTransaction;
  changes: readonly RecordChange[];
}

export interface FirstWrite extends NewTransactionWrite {
  principal: StoredPrincipal;
  /**
   * Replace the principal of this user at the referenceId that holds `transactionId`, which
   * never got its transaction, instead of creating a new principal.
   */
  takeOver?: { userId: string; transactionId: string };
  /**
   * Claim the user too. At its derived referenceId the principal (holding `userTransactionId`)
   * is the claim; elsewhere a pointer item, checked against the derived principal.
   */
  user?: { userId: string; derivedRef: string };
}

/** refused: the referenceId is taken, the transaction id exists, or the user is claimed. */
export type CreateOutcome =
  | { ok: StoredTransaction }
  | { refused: 'principal' | 'transaction' | 'user' }
  | { contention: true };

export interface ChangeWrite extends Write {
  /** The transaction as loaded: its `version` is the one that must still be stored. */
  current: StoredTransaction;
  next: StoredTransaction;
  changes: readonly RecordChange[];
  /** Conditional writes of the same commit; one refused with a `conflict` is that conflict. */
  extras?: readonly ExtraWrite[];
}

/**
 * stale: the transaction (or an extra without a conflict) changed since it was loaded;
 * conflict: the index of the first refused extra that names a conflict.
 */
export type ChangeOutcome = 'ok' | 'stale' | 'contention' | { conflict: number };

/** Changes to a principal or a user's claim, made in the same commit as a transaction's. */
export type PrincipalWrite =
  /** Links the principal to a user: it must exist and hold no user yet. */
  | { op: 'link-user'; referenceId: string; userId: string; email: string; at: string }
  /** The principal's e-mail; it must exist. */
  | { op: 'set-email'; referenceId: string; email: string; at: string }
  /** The principal's `erasedAt` (erasure.ts); it must exist. */
  | { op: 'mark-erased'; referenceId: string; at: string }
  /** Writes nothing: the principal exists, its activity and warning as they were seen. */
  | {
      op: 'principal-unchanged';
      referenceId: string;
      lastActiveAt: string | undefined;
      inactivityWarnedAt: string | undefined;
    }
  /** The user's claim at its derived referenceId, where nothing may be yet. */
  | { op: 'claim-user'; derivedRef: string; user: UserPointer }
  /** The user's pointer item, which must not exist yet. */
  | { op: 'point-user'; user: UserPointer }
  /** Writes nothing: the principal at the user's derived referenceId is not the user's. */
  | { op: 'not-derived-user'; derivedRef: string; userId: string };

export interface ExtraWrite {
  write: PrincipalWrite;
  /** The 409 detail when its condition fails. */
  conflict?: string;
}
