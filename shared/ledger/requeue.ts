import type { Runtime } from '../runtime.js';
import { updateIfHolds } from '../storage/dynamo.js';
import { getDispatchState, type DispatchState, dispatchKey } from './dispatches.js';
import { dispatchDue } from './dispatch-due.js';
import { dueEntry, ensureWatermark, shardOf } from '../storage/timers/due.js';
import { listDispatchesByApp } from './queries.js';

/**
 * Operator replay: makes a dispatch due now with a `manual` entry, replacing whatever entry it
 * had (one update of the dispatch item, which carries its entry: it never has two). The dispatcher's sweeper makes the attempt with the same
 * dispatch id and webhook-id. Returns undefined for an unknown dispatch.
 */
export async function requeueDispatch(
  rt: Runtime,
  dispatchId: string,
  nowMs = Date.now(),
): Promise<DispatchState | undefined> {
  const shards = rt.config.TIMER_SHARDS;
  // A dispatcher that has never run must not start its sweep after this entry.
  await ensureWatermark(rt, shardOf(dispatchId, shards), nowMs);
  for (let tries = 0; tries < 5; tries++) {
    const state = await getDispatchState(rt, dispatchId);
    if (!state) return undefined;
    const entry = dueEntry(dispatchId, state.appId, nowMs, 'manual', shards);
    const moved = await updateIfHolds(rt.dynamo.doc, {
      TableName: rt.tables.ledger,
      Key: dispatchKey(dispatchId),
      UpdateExpression:
        'SET duePk = :pk, dueSk = :sk, dueKind = :kind, nextAttemptAt = :at REMOVE dueSnoozes',
      ConditionExpression: state.dueSk ? 'dueSk = :old' : 'attribute_not_exists(dueSk)',
      ExpressionAttributeValues: {
        ':pk': entry.pk,
        ':sk': entry.sk,
        ':kind': entry.kind,
        ':at': entry.dueAt,
        ...(state.dueSk ? { ':old': state.dueSk } : {}),
      },
    });
    if (moved) return { ...state, ...dispatchDue(entry), nextAttemptAt: entry.dueAt };
    // The dispatch moved on meanwhile (an attempt completed): read it again.
  }
  throw new Error(`dispatch ${dispatchId} kept changing; requeue gave up`);
}

/** Re-queues every failed dispatch of an app whose event was created at or after `since`. */
export async function recoverFailed(
  rt: Runtime,
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
