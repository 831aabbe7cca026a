import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { DueAttributes, DueLease } from '../../domain/due-attributes.js';
import { updateIfHolds } from '../dynamo.js';
import { duePk, type DueFamily, type ItemKey, type TimerDeps, type TimerEntry } from './due.js';

export type { DueAttributes, DueLease } from '../../domain/due-attributes.js';

/**
 * Due entries derived from the items they belong to, instead of written apart in the `timers`
 * table. An item carries its pending entry in `duepk`/`duesk` (exactly the timers table's `pk`
 * and `sk` of that entry: `{family}#{minute bucket}#{shard}` and `{dueAt ISO}#{id}`) and
 * `duekind`; the sparse global secondary index `due` of its table (infra/definitions/tables.ts)
 * holds only the items that carry one, projecting their keys, `duekind` and what the action
 * needs (`appId`, `referenceId`, `transactionId`). A family's sweep reads a bucket of this index
 * beside the same bucket of the timers table (workers/timers/sweep.ts).
 *
 * The index is eventually consistent (no ConsistentRead on a GSI), which the walk covers: an
 * entry is never due before it is written, so it lands in the bucket of its write or a later
 * one, and a shard's watermark passes a bucket only after reading it empty at least a minute
 * after that bucket ended (shared/timers/walker.ts: `b < current - 1`); the last three minutes
 * are read on every sweep. An index that lags its table by less than a minute loses nothing.
 * Reading an entry that was fired a moment ago is harmless: its lease fails (`duesk` is gone).
 *
 * Leasing, giving back and removing an entry are conditional updates of the item itself, under
 * `duesk = :sk` (still that entry); the lease (`dueLeaseUntil`, `dueLeaseToken`) is not
 * projected, so taking it writes nothing to the index. The item's owner rewrites the item
 * with its due attributes as it loaded them, under the condition that they are still those
 * (`unchangedDueCondition`): a rewrite never brings back a fired entry nor drops a lease.
 */

export const DUE_INDEX = 'due';

/** What an item carries for `e` (an entry built as for the timers table). */
export function dueAttributes(e: Pick<TimerEntry, 'pk' | 'sk' | 'kind'>): DueAttributes {
  return { duepk: e.pk, duesk: e.sk, duekind: e.kind };
}

/**
 * The condition under which an item loaded as `loaded` may be written over: its due entry and
 * lease are still what was loaded (none, or the same). Combined with the owner's own condition.
 */
export function unchangedDueCondition(loaded: Partial<DueAttributes & DueLease>): {
  expression: string;
  values: Record<string, unknown>;
} {
  const values: Record<string, unknown> = {};
  const parts: string[] = [];
  if (loaded.duesk === undefined) parts.push('attribute_not_exists(duesk)');
  else {
    parts.push('duesk = :dueSk');
    values[':dueSk'] = loaded.duesk;
  }
  if (loaded.dueLeaseToken === undefined) parts.push('attribute_not_exists(dueLeaseToken)');
  else {
    parts.push('dueLeaseToken = :dueLeaseToken');
    values[':dueLeaseToken'] = loaded.dueLeaseToken;
  }
  return { expression: parts.join(' AND '), values };
}

/** The entry's due time: its sk starts with it (an ISO time holds no `#`). */
export const dueAtOf = (sk: string) => sk.slice(0, sk.indexOf('#'));

/**
 * Derived entries of one bucket and shard of `table`'s `due` index due at or before `nowMs`,
 * oldest first, each naming the item it belongs to (`from`). Not a consistent read (see above).
 */
export async function listDerivedDue<T extends TimerEntry = TimerEntry>(
  rt: Pick<TimerDeps, 'dynamo'>,
  table: string,
  bucket: number,
  shard: number,
  nowMs: number,
  limit: number,
  family: DueFamily,
): Promise<T[]> {
  const r = await rt.dynamo.doc.send(
    new QueryCommand({
      TableName: table,
      IndexName: DUE_INDEX,
      KeyConditionExpression: 'duepk = :pk AND duesk <= :now',
      ExpressionAttributeValues: {
        ':pk': duePk(bucket, shard, family),
        ':now': `${new Date(nowMs).toISOString()}#~`,
      },
      Limit: limit,
    }),
  );
  return (r.Items ?? []).map((item) => {
    const { pk, sk, duepk, duesk, duekind, ...rest } = item as DueAttributes &
      ItemKey &
      Record<string, unknown>;
    return {
      ...rest,
      pk: duepk,
      sk: duesk,
      dueAt: dueAtOf(duesk),
      kind: duekind,
      from: { table, pk, sk },
    } as unknown as T;
  });
}

type Derived = Pick<TimerEntry, 'sk'> & { from: ItemKey & { table: string } };

/** Claims a derived entry (as `leaseDue`): undefined when it is gone or leased by another. */
export async function leaseDerivedDue(
  rt: Pick<TimerDeps, 'dynamo'>,
  e: Derived,
  nowMs: number,
  leaseMs: number,
  token: string,
): Promise<string | undefined> {
  const leased = await updateIfHolds(rt.dynamo.doc, {
    TableName: e.from.table,
    Key: { pk: e.from.pk, sk: e.from.sk },
    UpdateExpression: 'SET dueLeaseUntil = :until, dueLeaseToken = :token',
    ConditionExpression:
      'duesk = :sk AND (attribute_not_exists(dueLeaseUntil) OR dueLeaseUntil < :now)',
    ExpressionAttributeValues: {
      ':sk': e.sk,
      ':until': nowMs + leaseMs,
      ':token': token,
      ':now': nowMs,
    },
  });
  return leased ? token : undefined;
}

/** Gives a lease of a derived entry back early (as `releaseDue`). */
export async function releaseDerivedDue(
  rt: Pick<TimerDeps, 'dynamo'>,
  e: Derived,
  token: string,
): Promise<void> {
  await updateIfHolds(rt.dynamo.doc, {
    TableName: e.from.table,
    Key: { pk: e.from.pk, sk: e.from.sk },
    UpdateExpression: 'REMOVE dueLeaseUntil, dueLeaseToken',
    ConditionExpression: 'duesk = :sk AND dueLeaseToken = :token',
    ExpressionAttributeValues: { ':sk': e.sk, ':token': token },
  });
}

/**
 * Removes a fired derived entry from its item (and so from the index), as `deleteDue` deletes a
 * timers-table entry; nothing when the item no longer carries that entry.
 */
export async function deleteDerivedDue(rt: Pick<TimerDeps, 'dynamo'>, e: Derived): Promise<void> {
  await updateIfHolds(rt.dynamo.doc, {
    TableName: e.from.table,
    Key: { pk: e.from.pk, sk: e.from.sk },
    UpdateExpression: 'REMOVE duepk, duesk, duekind, dueLeaseUntil, dueLeaseToken',
    ConditionExpression: 'duesk = :sk',
    ExpressionAttributeValues: { ':sk': e.sk },
  });
}
