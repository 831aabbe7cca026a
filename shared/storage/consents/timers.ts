import type { TableNames } from '../../../infra/definitions/tables.js';
import { dueAttributes } from '../timers/derived.js';
import { timerKey, type TimerEntry } from '../timers/due.js';
import type { TransactItem } from '../group-commit.js';
import { inactivityPlan } from '../../domain/consent/activity.js';
import type { RecordChange, StoredTransaction } from '../../domain/consent/model.js';
import {
  DEFAULT_REMINDER_DAYS,
  SCRUB_AFTER_MS,
  completesErasure,
  expiryInstants,
  scaleOf,
  type ExpiryKind,
} from '../../domain/consent/timers.js';
import type { App } from '../../domain/types.js';

/**
 * The consent domain's timers (shared/domain/consent/timers.ts) as items: puts into the timers
 * table, and the first timer of a new transaction as attributes of the transaction item itself
 * (`withFirstTimer`), which the sparse `due` index of `entities` exposes to the sweep
 * (shared/storage/timers/derived.ts), so a new transaction writes no timer item.
 */

export interface TimerDeps {
  tables: Pick<TableNames, 'timers'>;
  config: { TIMER_SHARDS: number };
}

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

const putDue = (d: TimerDeps, e: TimerEntry): TransactItem => ({
  Put: { TableName: d.tables.timers, Item: { ...e } },
});

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
  d: TimerDeps,
  app: Pick<App, 'slaTimeScale'>,
  txn: ExpiryTransaction,
  nowMs: number,
): TransactItem {
  const { expireAt } = expiryInstants(txn, 0, app);
  return putDue(d, expiryEntry('expire', txn, Math.max(expireAt, nowMs), d.config.TIMER_SHARDS));
}

/**
 * The principal's `inactivity` timer, due when its warning would be (never before `nowMs`);
 * none when the app has no inactivity policy. Its key depends only on the principal and the due
 * time, so writing it again changes nothing.
 */
export function inactivityTimerItem(
  d: TimerDeps,
  app: Pick<App, 'slaTimeScale' | 'inactivityErasureDays'>,
  p: { appId: string; referenceId: string },
  lastActiveMs: number,
  nowMs: number,
): TransactItem | undefined {
  const days = app.inactivityErasureDays;
  if (!days) return undefined;
  const { warnAt } = inactivityPlan(lastActiveMs, days, app);
  return putDue(
    d,
    expiryEntry(
      'inactivity',
      { appId: p.appId, referenceId: p.referenceId },
      Math.max(warnAt, nowMs),
      d.config.TIMER_SHARDS,
    ),
  );
}

/**
 * The first timer of a new transaction: its `reminder`, or its `expire` when it has no reminder
 * (never before `nowMs`). The expiry is scheduled when the reminder fires (`expireTimerItem`).
 */
export function firstExpiryEntry(
  d: TimerDeps,
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
  return expiryEntry(kind, txn, Math.max(atMs, nowMs), d.config.TIMER_SHARDS);
}

/**
 * A new transaction carrying its first timer (`firstExpiryEntry`) as the attributes of the
 * derived due-index: written with the transaction item, it costs no item of its own.
 */
export function withFirstTimer(
  d: TimerDeps,
  app: Pick<App, 'slaTimeScale'>,
  txn: StoredTransaction,
  nowMs: number,
  reminderDaysBefore?: number,
): StoredTransaction {
  return { ...txn, ...dueAttributes(firstExpiryEntry(d, app, txn, nowMs, reminderDaysBefore)) };
}

/**
 * The timer puts to add to a commit that changes `txn`. Due times are never before `nowMs`
 * (an entry below a sweeper's watermark would never be read). A new transaction's first timer
 * is not among them: the transaction carries it (`withFirstTimer`).
 */
export function timerItems(
  d: TimerDeps,
  app: Pick<App, 'slaTimeScale' | 'inactivityErasureDays'>,
  txn: StoredTransaction,
  o: {
    created: boolean;
    changes: readonly RecordChange[];
    nowMs: number;
  },
): TransactItem[] {
  const out: TransactItem[] = [];
  if (completesErasure(txn, o.changes))
    out.push(
      putDue(
        d,
        expiryEntry(
          'scrub',
          { appId: txn.appId, referenceId: txn.referenceId },
          o.nowMs + SCRUB_AFTER_MS / scaleOf(app),
          d.config.TIMER_SHARDS,
        ),
      ),
    );
  // A new transaction is the principal's activity: its inactivity timer starts from now.
  const inactive = o.created && inactivityTimerItem(d, app, txn, o.nowMs, o.nowMs);
  if (inactive) out.push(inactive);
  return out;
}
