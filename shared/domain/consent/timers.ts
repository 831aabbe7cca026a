import type { App } from '../types.js';
import type { RecordChange, StoredTransaction } from './model.js';
import { deriveStatus } from './states.js';

/**
 * The consent domain's timers in the `expiry#` family of the due-index, written in the same
 * commit as the change that makes them due (by the store: shared/storage/consents/timers.ts),
 * and fired by the timers worker:
 * - the validity window: `reminder` for a new transaction, and its `expire` once the reminder
 *   fired (a transaction without a reminder gets its `expire` at once). The new transaction's
 *   first timer is no item of its own: the transaction item carries it (the store's
 *   `withFirstTimer`: `duepk`/`duesk`/`duekind`, the keys it would have in the timers table) and
 *   the sparse `due` index of `entities` exposes it to the sweep (shared/storage/timers/derived.ts), so a
 *   new transaction writes no timer item. The `expire` the reminder writes goes to the timers table,
 * - `scrub` when an erase leaves a transaction fully erased (the 30-day erasure sweep),
 * - `inactivity` for a principal of an app with an inactivity policy: written when the principal
 *   is created (or gets a new transaction) and rescheduled by itself when it fires early
 *   (inactivity.ts), and `inactivity_scan`, which schedules every principal of an app after its
 *   policy was set or changed.
 * Pure rules: no I/O, the clock is a parameter.
 */

export const DAY_MS = 86_400_000;
/**
 * The reminder goes out this long before expiry unless the notice says otherwise
 * (docs/architecture.md, Expiry).
 */
export const DEFAULT_REMINDER_DAYS = 30;
/**
 * An erased principal's e-mail and user id are removed this long after the erase
 * (docs/architecture.md, 30-day erasure sweep).
 */
export const SCRUB_AFTER_MS = 30 * DAY_MS;

export type ExpiryKind = 'reminder' | 'expire' | 'scrub' | 'inactivity' | 'inactivity_scan';

export const scaleOf = (app: Pick<App, 'slaTimeScale'>) => Math.max(1, app.slaTimeScale || 1);

/**
 * When a transaction's reminder and expiry fire. A sandbox app's time scale compresses the
 * whole validity window from `createdAt` (as it does SLA windows), so a 365-day window with
 * scale 3600 ends after about 2.4 hours. No reminder when it would not come before the expiry.
 */
export function expiryInstants(
  txn: Pick<StoredTransaction, 'createdAt' | 'expiresAt'>,
  reminderDaysBefore: number,
  app: Pick<App, 'slaTimeScale'>,
): { reminderAt?: number; expireAt: number } {
  const start = Date.parse(txn.createdAt);
  const scale = scaleOf(app);
  const at = (ms: number) => Math.ceil(start + (ms - start) / scale);
  const end = Date.parse(txn.expiresAt);
  const expireAt = at(end);
  const reminderAt = at(end - reminderDaysBefore * DAY_MS);
  return reminderDaysBefore > 0 && reminderAt > start && reminderAt < expireAt
    ? { reminderAt, expireAt }
    : { expireAt };
}

/** The erase of the last live record of a transaction: its principal may be scrubbed later. */
export function completesErasure(txn: StoredTransaction, changes: readonly RecordChange[]) {
  return (
    changes.some((c) => c.to === 'erased') &&
    deriveStatus(txn.records.map((r) => r.state)) === 'erased'
  );
}
