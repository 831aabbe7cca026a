import { ATTR } from '../../storage/outbox/commits.js';
import { STREAM_WRITER_ATTR } from '../../storage/outbox/carrier-stream.js';
import { DeleteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Runtime } from '../../runtime.js';
import { isConditionFailure } from '../../storage/dynamo.js';
import { queryAll } from '../../storage/query.js';
import { getApp } from '../apps.js';
import { keyedHash } from '../crypto.js';
import { withFullRecords, type StoredTransaction } from './model.js';
import { derivedReferenceOf, keys } from '../../storage/consents/repository.js';
import { deriveStatus } from './states.js';
import { SCRUB_AFTER_MS } from './timers.js';

/**
 * The 30-day erasure sweep's data minimisation (docs/architecture.md, 30-day erasure sweep): once
 * every transaction of a principal is erased and 30 days (compressed for sandbox apps) have passed
 * since the last erase, the service's own copies of the person's e-mail and user id go: the
 * principal's `email`/`userId`, the user pointer item (its key is the user id), the user id of
 * the user's claim at its derived referenceId (repository.ts, `putClaim`; the claim itself stays,
 * so that referenceId is never free again while a pointer item may count on it being taken), and
 * any `userId`/`email` on transaction items. What remains is pseudonymous proof:
 * referenceId, record ids, states and times, and `userIdHash`, a keyed hash of the user id (HMAC
 * under a key derived from the service's key), which can confirm a claimed id but not reveal one.
 * Each step is idempotent, so a sweep cut short is simply run again.
 */

export interface ScrubCounts {
  principals: number;
  /** User pointer items deleted, and claims at a derived referenceId scrubbed. */
  userPointers: number;
  transactions: number;
}

export type ScrubOutcome =
  | { status: 'scrubbed'; counts: ScrubCounts }
  /** Nothing to do (yet): the principal is unknown, still has live consent, or the erase is recent. */
  | { status: 'unknown' | 'not_erased' | 'not_due' };

type Item = Record<string, unknown>;

function principalItems(rt: Runtime, appId: string, referenceId: string): Promise<Item[]> {
  return queryAll(rt.dynamo.doc, {
    TableName: rt.tables.entities,
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': keys.principal(appId, referenceId).pk },
    ConsistentRead: true,
  });
}

/** When the transaction's last record was erased (records carry the time of their last change). */
const erasedAt = (t: StoredTransaction) =>
  Math.max(Date.parse(t.updatedAt), ...t.records.map((r) => Date.parse(r.updatedAt)));

/** What a transaction item holds of the commit that created it (outbox.ts, `commit`'s carrier). */
const CARRIED = [ATTR.packed, STREAM_WRITER_ATTR, ATTR.at].join(', ');

export async function scrubPrincipal(
  rt: Runtime,
  appId: string,
  referenceId: string,
  now: Date,
): Promise<ScrubOutcome> {
  const items = await principalItems(rt, appId, referenceId);
  const principal = items.find((i) => i.sk === 'PRINCIPAL');
  if (!principal) return { status: 'unknown' };
  const txns = (
    items.filter((i) => String(i.sk).startsWith('TXN#')) as unknown as (Item & StoredTransaction)[]
  ).map(withFullRecords);
  if (txns.some((t) => deriveStatus(t.records.map((r) => r.state)) !== 'erased'))
    return { status: 'not_erased' };
  const app = await getApp(rt, appId);
  const scale = Math.max(1, app?.slaTimeScale ?? 1);
  const last = Math.max(0, ...txns.map(erasedAt));
  // A later erase scheduled its own sweep; this one is early for it.
  if (last + SCRUB_AFTER_MS / scale > now.getTime()) return { status: 'not_due' };

  const at = now.toISOString();
  const hash = (userId: unknown) => keyedHash(rt.config, 'user', String(userId));
  const counts: ScrubCounts = { principals: 0, userPointers: 0, transactions: 0 };
  // The principal goes last: once it has no identity the whole scrub is done, and a sweep cut
  // short before that finds the principal still identified and runs again.
  const withIdentity = items
    .filter((i) => i.userId !== undefined || i.email !== undefined)
    .sort((a, b) => Number(a.sk === 'PRINCIPAL') - Number(b.sk === 'PRINCIPAL'));

  const userIds = new Set(
    withIdentity.map((i): unknown => i.userId).filter((u): u is string => typeof u === 'string'),
  );
  for (const userId of userIds) {
    try {
      await rt.dynamo.doc.send(
        new DeleteCommand({
          TableName: rt.tables.entities,
          Key: keys.user(appId, userId),
          // The id may since belong to a new principal (the person came back): not ours to remove.
          ConditionExpression: 'referenceId = :ref',
          ExpressionAttributeValues: { ':ref': referenceId },
        }),
      );
      counts.userPointers++;
    } catch (err) {
      if (!isConditionFailure(err)) throw err;
    }
    // The user's claim at its derived referenceId, if it is this principal's.
    try {
      await rt.dynamo.doc.send(
        new UpdateCommand({
          TableName: rt.tables.entities,
          Key: keys.principal(appId, await derivedReferenceOf(rt, appId, userId)),
          UpdateExpression: 'SET scrubbedAt = :at, userIdHash = :h REMOVE userId',
          ConditionExpression: 'claimOf = :ref AND userId = :u',
          ExpressionAttributeValues: {
            ':at': at,
            ':h': hash(userId),
            ':ref': referenceId,
            ':u': userId,
          },
        }),
      );
      counts.userPointers++;
    } catch (err) {
      if (!isConditionFailure(err)) throw err;
    }
  }

  for (const item of withIdentity) {
    const isTxn = String(item.sk).startsWith('TXN#');
    const sets = ['scrubbedAt = :at'];
    const values: Record<string, unknown> = { ':at': at };
    if (item.userId !== undefined) {
      sets.push('userIdHash = :h');
      values[':h'] = hash(item.userId);
    }
    let condition = 'attribute_exists(pk)';
    if (isTxn) {
      // A concurrent writer holding the old version must re-read (and find no user id).
      sets.push('#v = :next');
      values[':next'] = Number(item.version) + 1;
      values[':v'] = Number(item.version);
      condition += ' AND #v = :v';
    }
    await rt.dynamo.doc.send(
      new UpdateCommand({
        TableName: rt.tables.entities,
        Key: { pk: item.pk, sk: item.sk },
        // A transaction also drops the events it carried since its creation (outbox.ts, carrier):
        // they name the user.
        UpdateExpression: `SET ${sets.join(', ')} REMOVE userId, email${isTxn ? `, ${CARRIED}` : ''}`,
        ConditionExpression: condition,
        ...(isTxn ? { ExpressionAttributeNames: { '#v': 'version' } } : {}),
        ExpressionAttributeValues: values,
      }),
    );
    if (item.sk === 'PRINCIPAL') counts.principals++;
    else if (isTxn) counts.transactions++;
  }
  return { status: 'scrubbed', counts };
}
