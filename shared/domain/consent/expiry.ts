import { AppError } from '../../errors.js';
import type { ConsentDeps } from './deps.js';
import { getApp } from '../apps.js';
import { applyOperation } from './apply.js';
import { reminderEvent, type ConsentEvent } from './events.js';
import type { Actor, StoredTransaction } from './model.js';
import { expiryInstants } from './timers.js';
import { mutateTransaction, type Mutation, type WriteContext } from './writer.js';

/**
 * The validity window's two moments (docs/architecture.md, Expiry), run by the timers worker
 * through the same one-commit writer as every other change. Both are idempotent: firing twice
 * changes nothing the second time and emits nothing.
 */

/** Changes made by the service itself, not by a caller, are recorded as this actor. */
export const TIMERS_ACTOR: Actor = { source: 'api', credential: 'system:timers' };

async function mutate(
  rt: ConsentDeps,
  appId: string,
  transactionId: string,
  now: Date,
  apply: (t: StoredTransaction, at: string) => Mutation,
): Promise<ConsentEvent[]> {
  const app = await getApp(rt, appId);
  // The app was removed: its consents have nobody left to notify.
  if (!app) return [];
  const ctx: WriteContext = { rt, app, actor: TIMERS_ACTOR, now: () => now };
  try {
    const { events } = await mutateTransaction(
      ctx,
      () => rt.sweeps.expiry.loadTransaction(appId, transactionId),
      apply,
    );
    return events;
  } catch (err) {
    if (err instanceof AppError && err.code === 'SVC_NOT_FOUND') return [];
    throw err;
  }
}

/**
 * The end of the validity window: every live record of the transaction becomes `expired`
 * (`consent.expired`, postback due in 72 h, compressed by the app's time scale). Erased and
 * already expired records stay as they are.
 */
export function expireTransaction(
  rt: ConsentDeps,
  appId: string,
  transactionId: string,
  now: Date,
): Promise<ConsentEvent[]> {
  return mutate(rt, appId, transactionId, now, (t, at) => applyOperation(t.records, 'expire', at));
}

/**
 * `consent.expiry.reminder`, once per transaction (`reminderSentAt`), and only while some
 * purpose is still granted: there is nothing to renew otherwise. It needs no postback. The
 * transaction's `expire` timer is written first (whether or not a reminder goes out, as long as
 * a record can still expire): a new transaction with a reminder gets only the reminder's timer.
 * Should that write fail, the reminder's own timer stays and fires again.
 */
export async function remindExpiry(
  rt: ConsentDeps,
  appId: string,
  transactionId: string,
  now: Date,
): Promise<ConsentEvent[]> {
  const [app, current] = await Promise.all([
    getApp(rt, appId),
    rt.sweeps.expiry.loadTransaction(appId, transactionId),
  ]);
  if (!app || !current) return [];
  // Only while some record can still expire: a reminder fired again after the expiry (a
  // timer redelivered, or put back by hand) must not arm a second expiry.
  if (current.records.some((r) => r.state !== 'expired' && r.state !== 'erased')) {
    // Never before now: an entry below a sweeper's watermark would never be read.
    const { expireAt } = expiryInstants(current, 0, app);
    const at = Math.max(expireAt, now.getTime());
    await rt.sweeps.expiry.putTimer({ kind: 'expire', ...current, dueAtMs: at });
  }
  return mutate(rt, appId, transactionId, now, (t, at) => {
    const granted = t.records.some((r) => r.state === 'granted');
    if (t.reminderSentAt !== undefined || !granted) return { records: t.records, changes: [] };
    return {
      records: t.records,
      changes: [],
      force: true,
      patch: { reminderSentAt: at },
      events: (c) => [reminderEvent(c)],
    };
  });
}
