import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { LedgerDeps } from './deps.js';
import { DUE_INDEX, dueAtOf } from '../timers/derived.js';
import { duePk, type DueEntry, type DueKind } from '../timers/due.js';
import { dispatchIdOf } from './packed.js';

/**
 * The dispatcher's retry due-index, derived from the dispatch items themselves. A dispatch
 * with an attempt due carries that entry's keys in `duePk`/`dueSk` (the due-index's bucket
 * `retry#{minute}#{shard}` and `{dueAt ISO}#{dispatchId}`, shared/storage/timers/due.ts) and its kind
 * in `dueKind`; the ledger's sparse global secondary index `due` (infra/definitions/tables.ts)
 * holds exactly those items, projecting `dueKind`, `appId` and `dispatchId` (a packed item has
 * its id only in its key, `dispatchIdOf`). So scheduling, moving or clearing a dispatch's next
 * attempt is part of the one update of its item that records an attempt, and nothing is
 * written to the `timers` table.
 *
 * The index is eventually consistent. The sweep walks it with the shared bucket walk
 * (shared/timers/walker.ts), which reads the last three minutes on every pass and passes a
 * bucket only once it read empty a minute after it ended, so an index that lags by less than
 * a minute loses nothing. An entry read after it moved on is harmless: the claim re-reads the
 * dispatch item (consistently) and its update is conditional on `dueSk` still being that entry.
 */

/** The attributes a dispatch item carries while an attempt is due. */
export interface DispatchDue {
  duePk: string;
  dueSk: string;
  dueKind: DueKind;
}

export const dispatchDue = (e: Pick<DueEntry, 'pk' | 'sk' | 'kind'>): DispatchDue => ({
  duePk: e.pk,
  dueSk: e.sk,
  dueKind: e.kind,
});

/** The attributes of a dispatch item that name its due entry, removed together. */
export const DUE_ATTRS = 'duePk, dueSk, dueKind, dueSnoozes';

/**
 * Dispatches of one bucket and shard of the ledger's `due` index with an attempt due at or
 * before `nowMs`, oldest first, as due entries. Not a consistent read (see above).
 */
export async function listDispatchDue(
  db: LedgerDeps,
  bucket: number,
  shard: number,
  nowMs: number,
  limit: number,
): Promise<DueEntry[]> {
  const r = await db.dynamo.doc.send(
    new QueryCommand({
      TableName: db.tables.ledger,
      IndexName: DUE_INDEX,
      KeyConditionExpression: 'duePk = :pk AND dueSk <= :now',
      ExpressionAttributeValues: {
        ':pk': duePk(bucket, shard, 'retry'),
        ':now': `${new Date(nowMs).toISOString()}#~`,
      },
      Limit: limit,
    }),
  );
  return (r.Items ?? []).map((item) => {
    const i = item as DispatchDue & { appId: string };
    return {
      pk: i.duePk,
      sk: i.dueSk,
      dueAt: dueAtOf(i.dueSk),
      kind: i.dueKind,
      dispatchId: dispatchIdOf(item)!,
      appId: i.appId,
    };
  });
}
