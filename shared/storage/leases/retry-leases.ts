import { PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { releaseGaugeLease, takeGaugeLease, type LeaseDeps } from './gauge-lease.js';

/**
 * The retry due-index's shard leases (workers/dispatcher/shard-leases.ts), items in the
 * `timers` table under pk `lease#retry`:
 * - `shard#{n}`: the lease of shard n (`owner`, `leaseUntil`), taken and renewed by a
 *   conditional put (`takeGaugeLease`);
 * - `copy#{owner}`: each live copy's presence.
 */

const PK = 'lease#retry';
const shardSk = (n: number) => `shard#${n}`;
const copySk = (owner: string) => `copy#${owner}`;

export interface RetryLeaseItems {
  /** Live and stale presences: owner → its `leaseUntil`. */
  copies: { owner: string; leaseUntil: number }[];
  /** Shard → its lease as stored. */
  shards: Map<number, { owner: string; leaseUntil: number }>;
}

/** Writes `owner`'s presence until `untilMs` (unconditional: only that copy writes it). */
export async function putPresence(db: LeaseDeps, owner: string, untilMs: number): Promise<void> {
  await db.dynamo.doc.send(
    new PutCommand({
      TableName: db.tables.timers,
      Item: { pk: PK, sk: copySk(owner), owner, leaseUntil: untilMs },
    }),
  );
}

/** Every presence and shard lease (one consistent query). */
export async function readRetryLeases(db: LeaseDeps): Promise<RetryLeaseItems> {
  const r = await db.dynamo.doc.send(
    new QueryCommand({
      TableName: db.tables.timers,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': PK },
      ConsistentRead: true,
    }),
  );
  const items = (r.Items ?? []) as { sk: string; owner: string; leaseUntil: number }[];
  return {
    copies: items
      .filter((i) => i.sk.startsWith('copy#'))
      .map((i) => ({ owner: i.owner, leaseUntil: i.leaseUntil })),
    shards: new Map(
      items
        .filter((i) => i.sk.startsWith('shard#'))
        .map((i) => [Number(i.sk.slice(6)), { owner: i.owner, leaseUntil: i.leaseUntil }]),
    ),
  };
}

/** Takes or renews shard `n`'s lease for `owner` (false when another copy holds it). */
export const takeShard = (
  db: LeaseDeps,
  owner: string,
  n: number,
  nowMs: number,
  untilMs: number,
) => takeGaugeLease(db, owner, nowMs, untilMs, { pk: PK, sk: shardSk(n) });

/** Gives shard `n`'s lease back, if `owner` still holds it. */
export const releaseShard = (db: LeaseDeps, owner: string, n: number) =>
  releaseGaugeLease(db, owner, { pk: PK, sk: shardSk(n) });

/** Removes `owner`'s presence (its own, or a copy's gone long ago). */
export const releasePresence = (db: LeaseDeps, owner: string) =>
  releaseGaugeLease(db, owner, { pk: PK, sk: copySk(owner) });
