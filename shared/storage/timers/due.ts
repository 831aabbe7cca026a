import { createHash } from 'node:crypto';
import {
  DeleteCommand,
  GetCommand,
  PutCommand,
  QueryCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import type { TableNames } from '../../../infra/definitions/tables.js';
import type { TransactItem } from '../outbox/outbox.js';
import { isConditionFailure, updateIfHolds } from '../dynamo.js';

/**
 * The due-index in the timers table: pk `{family}#{minute bucket}#{shard}`, sk
 * `{dueAt ISO}#{id}`. A sweep reads only buckets that are due, so its cost grows with due
 * entries, not with stored ones; shards let several worker copies share the work. Each family
 * has its own partitions and watermarks, so one mechanism serves the dispatcher's retries
 * (`retry#`), the SLA checks (`sla#`), the consent expiry timers (`expiry#`) and the grievance and
 * breach-report deadlines (`duty#`) without one sweeper ever reading another's entries.
 * The retry family's entries are kept on the dispatch items themselves and found through the
 * ledger's `due` index (shared/storage/ledger/dispatch-due.ts): a dispatch has at most one.
 * An entry may also be derived from the item it belongs to instead of written here (a sparse
 * index on the item's due time, derived.ts): the expiry family's sweep reads both.
 * Shard counts may grow but never shrink (entries in a dropped shard would not be read).
 */

/** What the due-index's code uses: the document client and the timers table's name. */
export interface TimerDeps {
  dynamo: { doc: DynamoDBDocumentClient };
  tables: Pick<TableNames, 'timers'>;
}

export type DueFamily = 'retry' | 'sla' | 'expiry' | 'duty';

export type DueKind = 'attempt' | 'manual';

export interface DueKey {
  pk: string;
  sk: string;
}

/** The key of an item of a table with `pk` and `sk`. */
export interface ItemKey {
  pk: string;
  sk: string;
}

/** Any entry of the index: its keys, when it is due, and what to do (`kind`). */
export interface TimerEntry extends DueKey {
  dueAt: string;
  kind: string;
  /**
   * The item an entry derived from it belongs to (derived.ts): its table and key.
   * Absent for an entry of the timers table.
   */
  from?: ItemKey & { table: string };
}

/** A retry-family entry (the dispatcher's). */
export interface DueEntry extends TimerEntry {
  dispatchId: string;
  appId: string;
  kind: DueKind;
}

const MINUTE_MS = 60_000;
const watermarkPk = (family: DueFamily) => `${family}#watermark`;

/** Minute bucket number of a time. */
export const bucketOf = (ms: number) => Math.floor(ms / MINUTE_MS);
const bucketText = (b: number) => new Date(b * MINUTE_MS).toISOString().slice(0, 16);

export function shardOf(id: string, shards: number): number {
  return createHash('sha256').update(id).digest().readUInt32BE(0) % shards;
}

export function duePk(bucket: number, shard: number, family: DueFamily = 'retry'): string {
  return `${family}#${bucketText(bucket)}#${shard}`;
}

/** The keys of an entry for `id` due at `dueAtMs`; the id picks the shard and ends the sk. */
export function timerKey(
  family: DueFamily,
  id: string,
  dueAtMs: number,
  shards: number,
): DueKey & { dueAt: string } {
  const dueAt = new Date(dueAtMs).toISOString();
  return {
    pk: duePk(bucketOf(dueAtMs), shardOf(id, shards), family),
    sk: `${dueAt}#${id}`,
    dueAt,
  };
}

export function dueEntry(
  dispatchId: string,
  appId: string,
  dueAtMs: number,
  kind: DueKind,
  shards: number,
): DueEntry {
  return { ...timerKey('retry', dispatchId, dueAtMs, shards), dispatchId, appId, kind };
}

export function duePutItem(rt: TimerDeps, e: TimerEntry): TransactItem {
  return { Put: { TableName: rt.tables.timers, Item: { ...e } } };
}

export function dueDeleteItem(rt: TimerDeps, k: DueKey, mustExist = false): TransactItem {
  return {
    Delete: {
      TableName: rt.tables.timers,
      Key: { pk: k.pk, sk: k.sk },
      ...(mustExist ? { ConditionExpression: 'attribute_exists(pk)' } : {}),
    },
  };
}

export async function deleteDue(rt: TimerDeps, k: DueKey): Promise<void> {
  await rt.dynamo.doc.send(
    new DeleteCommand({ TableName: rt.tables.timers, Key: { pk: k.pk, sk: k.sk } }),
  );
}

/** Entries of one bucket and shard due at or before `nowMs`, oldest first. */
export async function listDue<T extends TimerEntry = DueEntry>(
  rt: TimerDeps,
  bucket: number,
  shard: number,
  nowMs: number,
  limit: number,
  family: DueFamily = 'retry',
): Promise<T[]> {
  const r = await rt.dynamo.doc.send(
    new QueryCommand({
      TableName: rt.tables.timers,
      KeyConditionExpression: 'pk = :pk AND sk <= :now',
      ExpressionAttributeValues: {
        ':pk': duePk(bucket, shard, family),
        ':now': `${new Date(nowMs).toISOString()}#~`,
      },
      ConsistentRead: true,
      Limit: limit,
    }),
  );
  return (r.Items ?? []) as T[];
}

/**
 * The sweep watermark of a shard: every bucket before it has been drained. Created at the
 * current time when absent, before anything is written to the index by this process, so no
 * entry can sit below a watermark that never existed.
 */
export async function ensureWatermark(
  rt: TimerDeps,
  shard: number,
  nowMs: number,
  family: DueFamily = 'retry',
): Promise<number> {
  const key = { pk: watermarkPk(family), sk: String(shard) };
  const initial = bucketOf(nowMs) - 2;
  try {
    await rt.dynamo.doc.send(
      new PutCommand({
        TableName: rt.tables.timers,
        Item: { ...key, bucket: initial },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
    return initial;
  } catch (err) {
    if (!isConditionFailure(err)) throw err;
  }
  const r = await rt.dynamo.doc.send(
    new GetCommand({ TableName: rt.tables.timers, Key: key, ConsistentRead: true }),
  );
  return Number(r.Item?.bucket ?? initial);
}

/** Per runtime, the families whose watermarks this process already made sure of. */
const ensured = new WeakMap<TimerDeps, Map<DueFamily, Promise<void>>>();

/**
 * Makes sure every shard of a family has a watermark before this process first writes an
 * entry of that family (once per process). Writers other than the family's sweeper (the
 * dispatcher writes SLA checks, the consent domain expiry timers) call this, so an entry
 * written before any sweeper ever ran is never left below a watermark created after it.
 */
export function ensureFamily(
  rt: TimerDeps,
  family: DueFamily,
  shards: number,
  nowMs = Date.now(),
): Promise<void> {
  let byFamily = ensured.get(rt);
  if (!byFamily) ensured.set(rt, (byFamily = new Map<DueFamily, Promise<void>>()));
  let p = byFamily.get(family);
  if (!p) {
    p = (async () => {
      for (let s = 0; s < shards; s++) await ensureWatermark(rt, s, nowMs, family);
    })();
    // A failure is not remembered: the next write tries again.
    p.catch(() => byFamily.delete(family));
    byFamily.set(family, p);
  }
  return p;
}

/** Moves a shard's watermark forward (never back; concurrent sweepers may race). */
export async function advanceWatermark(
  rt: TimerDeps,
  shard: number,
  bucket: number,
  family: DueFamily = 'retry',
): Promise<void> {
  await updateIfHolds(rt.dynamo.doc, {
    TableName: rt.tables.timers,
    Key: { pk: watermarkPk(family), sk: String(shard) },
    UpdateExpression: 'SET #b = :b',
    ConditionExpression: '#b < :b',
    ExpressionAttributeNames: { '#b': 'bucket' }, // a reserved word
    ExpressionAttributeValues: { ':b': bucket },
  });
}

/** Past buckets a shard's sweep may catch up on per tick (keeps one tick short after downtime). */
const CATCH_UP_BUCKETS = 60;

/**
 * The buckets of one sweep: from the watermark on, at most CATCH_UP_BUCKETS of backlog, and
 * always the last three minutes, so fresh entries are never held up by a long catch-up.
 */
export function bucketsToSweep(from: number, current: number): number[] {
  const out: number[] = [];
  const catchUpEnd = Math.min(current, from + CATCH_UP_BUCKETS);
  for (let b = from; b <= catchUpEnd; b++) out.push(b);
  for (let b = Math.max(catchUpEnd + 1, current - 2); b <= current; b++) out.push(b);
  return out;
}

/**
 * Claims an entry for `leaseMs` (a conditional update: one worker copy wins). The entry stays
 * in its bucket until `deleteDue`, so a worker that dies holding it loses nothing: the lease
 * runs out and another copy fires it again (the actions are idempotent). Returns the lease
 * token, or undefined when the entry is gone or leased by someone else.
 */
export async function leaseDue(
  rt: TimerDeps,
  k: DueKey,
  nowMs: number,
  leaseMs: number,
  token: string,
): Promise<string | undefined> {
  const leased = await updateIfHolds(rt.dynamo.doc, {
    TableName: rt.tables.timers,
    Key: { pk: k.pk, sk: k.sk },
    UpdateExpression: 'SET leaseUntil = :until, leaseToken = :token',
    ConditionExpression:
      'attribute_exists(pk) AND (attribute_not_exists(leaseUntil) OR leaseUntil < :now)',
    ExpressionAttributeValues: { ':until': nowMs + leaseMs, ':token': token, ':now': nowMs },
  });
  return leased ? token : undefined;
}

/** Gives a lease back early (the action failed) so the next sweep retries at once. */
export async function releaseDue(rt: TimerDeps, k: DueKey, token: string): Promise<void> {
  await updateIfHolds(rt.dynamo.doc, {
    TableName: rt.tables.timers,
    Key: { pk: k.pk, sk: k.sk },
    UpdateExpression: 'REMOVE leaseUntil, leaseToken',
    ConditionExpression: 'leaseToken = :token',
    ExpressionAttributeValues: { ':token': token },
  });
}
