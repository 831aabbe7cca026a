import { Counter, type Registry } from 'prom-client';
import { expireTransaction, remindExpiry } from '../../shared/domain/consent/expiry.js';
import { fireInactivity, scheduleAllInactivity } from '../../shared/domain/consent/inactivity.js';
import { scrubPrincipal, type ScrubCounts } from '../../shared/domain/consent/scrub.js';
import type { ExpiryKind } from '../../shared/domain/consent/timers.js';
import type { ExpiryEntry } from '../../shared/storage/consents/timers.js';
import type { TimerEntry } from '../../shared/storage/timers/due.js';
import type { SlaCheckEntry, SlaCheckMessage } from '../../shared/storage/ledger/flag-entries.js';
import { getOrCreate } from '../../shared/metrics.js';
import type { Runtime } from '../../shared/runtime.js';

/** What each kind of due entry does when it fires. Every action is idempotent. */

export const TIMER_KINDS = [
  'sla',
  'reminder',
  'expire',
  'scrub',
  'grievance',
  'board_report',
  'inactivity',
  'inactivity_scan',
] as const;

export function timersMetrics(registry: Registry) {
  const fired = getOrCreate(
    registry,
    'svc_timers_fired_total',
    () =>
      new Counter({
        name: 'svc_timers_fired_total',
        help: 'Due entries fired by the timers worker, by kind and outcome (done, failed)',
        labelNames: ['kind', 'outcome'],
        registers: [registry],
      }),
  );
  for (const kind of TIMER_KINDS)
    for (const outcome of ['done', 'failed']) fired.inc({ kind, outcome }, 0);
  return { fired };
}

/**
 * `sla#`: asks the compliance worker (the only writer of flags) for a check, on the postbacks
 * topic keyed by dispatchId so it is ordered with that dispatch's postbacks. `at` is the
 * instant the check was due, so a late sweep still assesses from the right time on.
 */
export async function fireSlaCheck(rt: Runtime, e: TimerEntry): Promise<void> {
  const entry = e as SlaCheckEntry;
  const message: SlaCheckMessage = { type: 'sla.check', dispatchId: entry.dispatchId, at: e.dueAt };
  await rt.producer.send([
    { topic: rt.topics.postbacks, key: entry.dispatchId, value: JSON.stringify(message) },
  ]);
}

export interface ExpiryTally {
  events: number;
  scrub: ScrubCounts & { dispatches: number };
}

export const emptyTally = (): ExpiryTally => ({
  events: 0,
  scrub: { principals: 0, userPointers: 0, transactions: 0, dispatches: 0 },
});

/**
 * `expiry#`: the consent domain's timers. Reminder and expiry go through the consent writer
 * (one commit with their events); the scrub removes the principal's identifiers, then the
 * user id kept in the ledger's webhook bodies. Work done is added to `tally` for the log.
 */
export async function fireExpiry(
  rt: Runtime,
  e: TimerEntry,
  now: Date,
  tally: ExpiryTally,
): Promise<void> {
  const entry = e as ExpiryEntry;
  const kind: ExpiryKind = entry.kind;
  if (kind === 'scrub') {
    const r = await scrubPrincipal(rt, entry.appId, entry.referenceId, now);
    if (r.status !== 'scrubbed') {
      rt.log.debug({ referenceId: entry.referenceId, status: r.status }, 'nothing to scrub');
      return;
    }
    const dispatches = await rt.ledger.redactDispatchBodies(entry.appId, entry.referenceId, now);
    const s = tally.scrub;
    s.principals += r.counts.principals;
    s.userPointers += r.counts.userPointers;
    s.transactions += r.counts.transactions;
    s.dispatches += dispatches;
    return;
  }
  if (kind === 'inactivity') {
    const outcome = await fireInactivity(rt, entry.appId, entry.referenceId, now);
    if (outcome !== 'none' && outcome !== 'rescheduled')
      rt.log.info({ appId: entry.appId, referenceId: entry.referenceId, outcome }, 'inactivity');
    return;
  }
  if (kind === 'inactivity_scan') {
    const n = await scheduleAllInactivity(rt, entry.appId, now);
    rt.log.info({ appId: entry.appId, principals: n }, 'inactivity timers scheduled');
    return;
  }
  if (!entry.transactionId) return;
  const events =
    kind === 'reminder'
      ? await remindExpiry(rt, entry.appId, entry.transactionId, now)
      : await expireTransaction(rt, entry.appId, entry.transactionId, now);
  tally.events += events.length;
}
