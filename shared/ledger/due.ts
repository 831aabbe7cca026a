import { createHash } from 'node:crypto';
import {
  DeleteCommand,
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import type { TransactItem } from '../outbox/outbox.js';
import type { Runtime } from '../runtime.js';
import { isConditionFailure } from '../storage/dynamo.js';

/**
 * The dispatch due-index in the timers table: pk `retry#{minute bucket}#{shard}`, sk
 * `{dueAt ISO}#{dispatchId}`. A sweep reads only buckets that are due, so its cost grows with
 * due entries, not with stored ones; shards let several worker copies share the work.
 * Invariant: a dispatch has at most one entry, named by its `duePk`/`dueSk` attributes.
 * Shard counts may grow but never shrink (entries in a dropped shard would not be read).
 */

export type DueKind = 'attempt' | 'manual';

export interface DueKey {
  pk: string;
  sk: string;
}

export interface DueEntry extends DueKey {
  dispatchId: string;
  appId: string;
  dueAt: string;
  kind: DueKind;
}

const MINUTE_MS = 60_000;
const PREFIX = 'retry#';
const WATERMARK_PK = 'retry#watermark';

/** Minute bucket number of a time. */
export const bucketOf = (ms: number) => Math.floor(ms / MINUTE_MS);
const bucketText = (b: number) => new Date(b * MINUTE_MS).toISOString().slice(0, 16);

export function shardOf(dispatchId: string, shards: number): number {
  return createHash('sha256').update(dispatchId).digest().readUInt32BE(0) % shards;
}

export function duePk(bucket: number, shard: number): string {
  return `${PREFIX}${bucketText(bucket)}#${shard}`;
}

export function dueEntry(
  dispatchId: string,
  appId: string,
  dueAtMs: number,
  kind: DueKind,
  shards: number,
): DueEntry {
  const dueAt = new Date(dueAtMs).toISOString();
  return {
    pk: duePk(bucketOf(dueAtMs), shardOf(dispatchId, shards)),
    sk: `${dueAt}#${dispatchId}`,
    dispatchId,
    appId,
    dueAt,
    kind,
  };
}

export function duePutItem(rt: Runtime, e: DueEntry): TransactItem {
  return { Put: { TableName: rt.tables.timers, Item: { ...e } } };
}

export function dueDeleteItem(rt: Runtime, k: DueKey, mustExist = false): TransactItem {
  return {
    Delete: {
      TableName: rt.tables.timers,
      Key: { pk: k.pk, sk: k.sk },
      ...(mustExist ? { ConditionExpression: 'attribute_exists(pk)' } : {}),
    },
  };
}

export async function deleteDue(rt: Runtime, k: DueKey): Promise<void> {
  await rt.dynamo.doc.send(
    new DeleteCommand({ TableName: rt.tables.timers, Key: { pk: k.pk, sk: k.sk } }),
  );
}

/** Entries of one bucket and shard due at or before `nowMs`, oldest first. */
export async function listDue(
  rt: Runtime,
  bucket: number,
  shard: number,
  nowMs: number,
  limit: number,
): Promise<DueEntry[]> {
  const r = await rt.dynamo.doc.send(
    new QueryCommand({
      TableName: rt.tables.timers,
      KeyConditionExpression: 'pk = :pk AND sk <= :now',
      ExpressionAttributeValues: {
        ':pk': duePk(bucket, shard),
        ':now': `${new Date(nowMs).toISOString()}#~`,
      },
      ConsistentRead: true,
      Limit: limit,
    }),
  );
  return (r.Items ?? []) as DueEntry[];
}

/**
 * The sweep watermark of a shard: every bucket before it has been drained. Created at the
 * current time when absent, before anything is written to the index by this process, so no
 * entry can sit below a watermark that never existed.
 */
export async function ensureWatermark(rt: Runtime, shard: number, nowMs: number): Promise<number> {
  const key = { pk: WATERMARK_PK, sk: String(shard) };
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

/** Moves a shard's watermark forward (never back; concurrent sweepers may race). */
export async function advanceWatermark(rt: Runtime, shard: number, bucket: number): Promise<void> {
  try {
    await rt.dynamo.doc.send(
      new UpdateCommand({
        TableName: rt.tables.timers,
        Key: { pk: WATERMARK_PK, sk: String(shard) },
        UpdateExpression: 'SET #b = :b',
        ConditionExpression: '#b < :b',
        ExpressionAttributeNames: { '#b': 'bucket' }, // a reserved word
        ExpressionAttributeValues: { ':b': bucket },
      }),
    );
  } catch (err) {
    if (!isConditionFailure(err)) throw err;
  }
}
