import { updateIfHolds } from '../dynamo.js';
import { dueEntry } from '../timers/due.js';
import type { LedgerDeps } from './deps.js';
import { dispatchDue } from './dispatch-due.js';
import { dispatchKey, getDispatchState, type DispatchState } from './dispatches.js';

/**
 * Makes a dispatch due now with a `manual` entry, replacing whatever entry it had: one update of
 * the dispatch item (which carries its entry: it never has two), conditional on that entry still
 * being the one read. Undefined for an unknown dispatch.
 */
export async function markDueNow(
  db: LedgerDeps,
  dispatchId: string,
  nowMs: number,
): Promise<DispatchState | undefined> {
  const shards = db.config.TIMER_SHARDS;
  for (let tries = 0; tries < 5; tries++) {
    const state = await getDispatchState(db, dispatchId);
    if (!state) return undefined;
    const entry = dueEntry(dispatchId, state.appId, nowMs, 'manual', shards);
    const moved = await updateIfHolds(db.dynamo.doc, {
      TableName: db.tables.ledger,
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
