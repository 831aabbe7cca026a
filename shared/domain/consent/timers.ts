import { dueAttributes } from '../../storage/timers/derived.js';
import { duePutItem, timerKey, type TimerEntry } from '../../storage/timers/due.js';
import type { TransactItem } from '../../storage/outbox/outbox.js';
import type { Runtime } from '../../runtime.js';
import type { App } from '../types.js';
import { inactivityPlan } from './activity.js';
import type { RecordChange, StoredTransaction } from './model.js';
import { deriveStatus } from './states.js';

/**
 * The consent domain's timers in the `expiry#` family of the due-index, written in the same
 * commit as the change that makes them due, and fired by the timers worker:
 * - the validity window: `reminder` for a new transaction, and its `expire` once the reminder
 *   fired (a transaction without a reminder gets its `expire` at once). The new transaction's
 *   first timer is no item of its own: the transaction item carries it (`withFirstTimer`:
 *   `duepk`/`duesk`/`duekind`, the keys it would have in the timers table) and the sparse `due`
 *   index of `entities` exposes it to the sweep (shared/storage/timers/derived.ts), so a new transaction
 *   writes no timer item. The `expire` the reminder writes goes to the timers table,
 * - `scrub` when an erase leaves a transaction fully erased (the 30-day erasure sweep),
 * - `inactivity` for a principal of an app with an inactivity policy: written when the principal
 *   is created (or gets a new transaction) and rescheduled by itself when it fires early
 *   (inactivity.ts), and `inactivity_scan`, which schedules every principal of an app after its
 *   policy was set or changed.
 * Pure builders: no I/O, the clock is a parameter.
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

export interface ExpiryEntry extends TimerEntry {
  kind: ExpiryKind;
  appId: string;
  /** Empty for `inactivity_scan`, which concerns the whole app. */
  referenceId: string;
  /** For reminder and expire; a scrub concerns the whole principal. */
  transactionId?: string;
}

export function expiryEntry(
  kind: ExpiryKind,
  t: { appId: string; referenceId: string; transactionId?: string | undefined },
  dueAtMs: number,
  shards: number,
): ExpiryEntry {
  const id = `${kind}:${t.appId}:${t.transactionId ?? t.referenceId}`;
  return {
    ...timerKey('expiry', id, dueAtMs, shards),
    kind,
    appId: t.appId,
    referenceId: t.referenceId,
    ...(t.transactionId !== undefined ? { transactionId: t.transactionId } : {}),
  };
}

const scaleOf = (app: Pick<App, 'slaTimeScale'>) => Math.max(1, app.slaTimeScale || 1);

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

/** What a transaction's expiry timers are computed from. */
type ExpiryTransaction = Pick<
  StoredTransaction,
  'appId' | 'referenceId' | 'transactionId' | 'createdAt' | 'expiresAt'
>;

/**
 * The `expire` timer of a transaction, as the reminder writes it when it fires (never before
 * `nowMs`). Its key depends only on the transaction and the due time, so writing it again (a
 * reminder fired twice, or a transaction from before the reminder wrote it) changes nothing.
 */
export function expireTimerItem(
  rt: Runtime,
  app: Pick<App, 'slaTimeScale'>,
  txn: ExpiryTransaction,
  nowMs: number,
): TransactItem {
  const { expireAt } = expiryInstants(txn, 0, app);
  return duePutItem(
    rt,
    expiryEntry('expire', txn, Math.max(expireAt, nowMs), rt.config.TIMER_SHARDS),
  );
}

/**
 * The principal's `inactivity` timer, due when its warning would be (never before `nowMs`);
 * none when the app has no inactivity policy. Its key depends only on the principal and the due
 * time, so writing it again changes nothing.
 */
export function inactivityTimerItem(
  rt: Runtime,
  app: Pick<App, 'slaTimeScale' | 'inactivityErasureDays'>,
  p: { appId: string; referenceId: string },
  lastActiveMs: number,
  nowMs: number,
): TransactItem | undefined {
  const days = app.inactivityErasureDays;
  if (!days) return undefined;
  const { warnAt } = inactivityPlan(lastActiveMs, days, app);
  return duePutItem(
    rt,
    expiryEntry(
      'inactivity',
      { appId: p.appId, referenceId: p.referenceId },
      Math.max(warnAt, nowMs),
      rt.config.TIMER_SHARDS,
    ),
  );
}

/**
 * The first timer of a new transaction: its `reminder`, or its `expire` when it has no reminder
 * (never before `nowMs`). The expiry is scheduled when the reminder fires (`expireTimerItem`).
 */
export function firstExpiryEntry(
  rt: Runtime,
  app: Pick<App, 'slaTimeScale'>,
  txn: ExpiryTransaction,
  nowMs: number,
  reminderDaysBefore = DEFAULT_REMINDER_DAYS,
): ExpiryEntry {
  const when = expiryInstants(txn, reminderDaysBefore, app);
  const [kind, atMs] =
    when.reminderAt !== undefined
      ? (['reminder', when.reminderAt] as const)
      : (['expire', when.expireAt] as const);
  return expiryEntry(kind, txn, Math.max(atMs, nowMs), rt.config.TIMER_SHARDS);
}

/**
 * A new transaction carrying its first timer (`firstExpiryEntry`) as the attributes of the
 * derived due-index: written with the transaction item, it costs no item of its own.
 */
export function withFirstTimer(
  rt: Runtime,
  app: Pick<App, 'slaTimeScale'>,
  txn: StoredTransaction,
  nowMs: number,
  reminderDaysBefore?: number,
): StoredTransaction {
  return { ...txn, ...dueAttributes(firstExpiryEntry(rt, app, txn, nowMs, reminderDaysBefore)) };
}

/** The erase of the last live record of a transaction: its principal may be scrubbed later. */
export function completesErasure(txn: StoredTransaction, changes: readonly RecordChange[]) {
  return (
    changes.some((c) => c.to === 'erased') &&
    deriveStatus(txn.records.map((r) => r.state)) === 'erased'
  );
}

/**
 * The timer puts to add to a commit that changes `txn`. Due times are never before `nowMs`
 * (an entry below a sweeper's watermark would never be read). A new transaction's first timer
 * is not among them: the transaction carries it (`withFirstTimer`).
 */
export function timerItems(
  rt: Runtime,
  app: Pick<App, 'slaTimeScale' | 'inactivityErasureDays'>,
  txn: StoredTransaction,
  o: {
    created: boolean;
    changes: readonly RecordChange[];
    nowMs: number;
  },
): TransactItem[] {
  const shards = rt.config.TIMER_SHARDS;
  const out: TransactItem[] = [];
  if (completesErasure(txn, o.changes))
    out.push(
      duePutItem(
        rt,
        expiryEntry(
          'scrub',
          { appId: txn.appId, referenceId: txn.referenceId },
          o.nowMs + SCRUB_AFTER_MS / scaleOf(app),
          shards,
        ),
      ),
    );
  // A new transaction is the principal's activity: its inactivity timer starts from now.
  const inactive = o.created && inactivityTimerItem(rt, app, txn, o.nowMs, o.nowMs);
  if (inactive) out.push(inactive);
  return out;
}
