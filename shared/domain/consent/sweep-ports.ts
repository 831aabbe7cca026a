import type { StoredPrincipal, StoredTransaction } from './model.js';
import type { ExpiryKind } from './timers.js';

/**
 * The storage the consent sweeps need (activity, erasure marker, expiry, inactivity, scrub),
 * as ports: the rules stay in the sweep modules, the adapter (shared/storage/consents/
 * sweeps.ts) owns the keys, queries, pagination and conditions. A condition that fails where
 * the sweep expects it to (another writer was first) is an outcome, never an error.
 */

/** A consent timer to schedule: what it does, for which consent, and when. */
export interface TimerOrder {
  kind: ExpiryKind;
  appId: string;
  /** Empty for `inactivity_scan`, which concerns the whole app. */
  referenceId: string;
  /** For reminder and expire. */
  transactionId?: string | undefined;
  dueAtMs: number;
}

/** A principal's activity fields, as a sweep reads them to decide and then to condition on. */
export type ActivityFields = Pick<
  StoredPrincipal,
  'lastActiveAt' | 'inactivityWarnedAt' | 'createdAt' | 'updatedAt'
>;

/** What a principal's activity condition is on: the fields as they were read. */
export type SeenActivity = Pick<StoredPrincipal, 'lastActiveAt' | 'inactivityWarnedAt'>;

export interface ActivityStore {
  /** The principal's activity fields; undefined when there is no principal (or only a claim). */
  readActivity(appId: string, referenceId: string): Promise<ActivityFields | undefined>;
  /**
   * Sets `lastActiveAt` to `at` and removes the warning, if the principal exists and a warning
   * stands or its `lastActiveAt` is absent or before `floor`. False when that did not hold.
   */
  touchActivity(appId: string, referenceId: string, at: string, floor: string): Promise<boolean>;
}

/** A transaction as the erasure marker reads it. */
export type ErasureRead = Pick<
  StoredTransaction,
  'transactionId' | 'createdAt' | 'updatedAt' | 'records'
>;

export interface ErasureStore {
  /**
   * The principal's transactions (full records), a consistent read, a page at a time: a page is
   * read only when the caller asks for it.
   */
  transactionPages(appId: string, referenceId: string): AsyncIterable<ErasureRead[]>;
  /** Sets `erasedAt` to `at` on an existing principal whose `erasedAt` is absent or earlier. */
  markErased(appId: string, referenceId: string, at: string): Promise<boolean>;
}

export interface ExpiryStore {
  loadTransaction(appId: string, transactionId: string): Promise<StoredTransaction | undefined>;
  /** Writes a timer entry into the due-index (the same entry again is the same item). */
  putTimer(entry: TimerOrder): Promise<void>;
}

/** A principal as the inactivity scan reads it. */
export type ScannedPrincipal = Pick<
  StoredPrincipal,
  'appId' | 'referenceId' | 'lastActiveAt' | 'inactivityWarnedAt' | 'createdAt' | 'updatedAt'
>;

export interface InactivityStore {
  /** Makes sure the expiry timers' shards exist before a timer is scheduled at `nowMs`. */
  ensureTimers(nowMs: number): Promise<void>;
  loadPrincipal(appId: string, referenceId: string): Promise<StoredPrincipal | undefined>;
  putTimer(entry: TimerOrder): Promise<void>;
  /**
   * Sets `inactivityWarnedAt` to `at` and writes the erasure's timer, in one write, if the
   * principal's activity fields are still `seen`. False when they are not.
   */
  markWarned(
    appId: string,
    referenceId: string,
    seen: SeenActivity,
    at: string,
    timer: TimerOrder,
  ): Promise<boolean>;
  /** Every principal of the app (no claims), a page at a time, read as the caller asks. */
  principalPages(appId: string): AsyncIterable<ScannedPrincipal[]>;
}

/** The identity a scrub removes from an item. */
export interface Identity {
  userId?: unknown;
  email?: unknown;
}

export interface ScrubHoldings {
  /** The item at the principal's key. */
  principal: StoredPrincipal & Identity;
  /** Its transactions in key order, full records. */
  transactions: (StoredTransaction & Identity)[];
}

/** What a scrub writes in place of the identity. */
export interface ScrubMark {
  at: string;
  /** Set when the item held a user id: its keyed hash. */
  userIdHash?: string;
}

export interface ScrubStore {
  /** The principal and its transactions, a consistent read; undefined without a principal. */
  loadHoldings(appId: string, referenceId: string): Promise<ScrubHoldings | undefined>;
  /** The referenceId a user id is first offered at in the app (its claim's key). */
  derivedReferenceOf(appId: string, userId: string): Promise<string>;
  /** Deletes the user pointer item if it points at `referenceId`. False when it does not. */
  deleteUserPointer(appId: string, userId: string, referenceId: string): Promise<boolean>;
  /**
   * Replaces the user id of the claim at `claimRef` by its hash, if the claim is the user's and
   * points at `referenceId`. False when it is not.
   */
  scrubClaim(
    appId: string,
    claimRef: string,
    claim: { referenceId: string; userId: string },
    mark: Required<ScrubMark>,
  ): Promise<boolean>;
  /** Removes user id and e-mail from the principal item. */
  scrubPrincipal(appId: string, referenceId: string, mark: ScrubMark): Promise<void>;
  /**
   * Removes user id, e-mail and the carried events from a transaction item, if it is still at
   * `version` (moving it to the next version); a condition failure is thrown.
   */
  scrubTransaction(
    t: Pick<StoredTransaction, 'appId' | 'referenceId' | 'transactionId' | 'version'>,
    mark: ScrubMark,
  ): Promise<void>;
}

/** The sweeps' stores, one per sweep (shared/runtime.ts, `sweeps`). */
export interface SweepStores {
  activity: ActivityStore;
  erasure: ErasureStore;
  expiry: ExpiryStore;
  inactivity: InactivityStore;
  scrub: ScrubStore;
}
