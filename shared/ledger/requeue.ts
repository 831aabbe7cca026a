import type { BaseConfig } from '../config.js';
import type { DispatchState } from '../storage/ledger/dispatches.js';
import { ensureWatermark, shardOf, type TimerDeps } from '../storage/timers/due.js';
import type { WithLedger } from './port.js';
import { listDispatchesByApp } from './queries.js';

/**
 * What re-queueing uses: the ledger, the due-index (its watermark) and the number of timer
 * shards; a Runtime is one.
 */
export interface RequeueDeps extends WithLedger, TimerDeps {
  config: Pick<BaseConfig, 'TIMER_SHARDS'>;
}

/**
 * Operator replay: makes a dispatch due now with a `manual` entry (`Ledger.markDueNow`). The
 * dispatcher's sweeper makes the attempt with the same dispatch id and webhook-id. Returns
 * undefined for an unknown dispatch.
 */
export async function requeueDispatch(
  rt: RequeueDeps,
  dispatchId: string,
  nowMs = Date.now(),
): Promise<DispatchState | undefined> {
  const shards = rt.config.TIMER_SHARDS;
  // A dispatcher that has never run must not start its sweep after this entry.
  await ensureWatermark(rt, shardOf(dispatchId, shards), nowMs);
  return rt.ledger.markDueNow(dispatchId, nowMs);
}

/** Re-queues every failed dispatch of an app whose event was created at or after `since`. */
export async function recoverFailed(
  rt: RequeueDeps,
  appId: string,
  since: string,
  nowMs = Date.now(),
): Promise<number> {
  let requeued = 0;
  let cursor: string | undefined;
  do {
    const page = await listDispatchesByApp(rt, appId, {
      from: since,
      deliveryStatus: 'failed',
      limit: 200,
      cursor,
    });
    for (const d of page.items) if (await requeueDispatch(rt, d.dispatchId, nowMs)) requeued++;
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return requeued;
}
