import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createHash } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';
import { Counter, type Registry } from 'prom-client';
import type { OutMessage, Producer } from '../../bus/producer.js';
import type { Logger } from '../../logger.js';
import { getOrCreate } from '../../metrics.js';
import type { TransactItem } from '../group-commit.js';
import { STREAM_WRITER_ATTR } from './carrier-stream.js';

/**
 * A commit's events as stored, for the writer that stores them (outbox.ts) and the relay that
 * publishes a stopped writer's (relay.ts).
 */

/** What the writer (outbox.ts) and the relay (relay.ts) both use. */
export interface OutboxTableDeps {
  doc: DynamoDBDocumentClient;
  /** The outbox table: writers' progress items, outbox items, stream checkpoints. */
  table: string;
  producer: Producer;
  log: Logger;
  registry: Registry;
  /** The key attribute names of a table, by full name. */
  keyAttributes?: (table: string) => readonly string[];
}

/**
 * The messages of one commit, in order, under the first one's id and the commit's creation time
 * (both in `obxt`).
 */
export interface Envelope {
  id: string;
  messages: OutMessage[];
  createdAtMs: number;
}

/**
 * The messages of a commit as stored: gzip-compressed JSON (`packed` in an outbox item, `obx` in
 * a carrier item).
 */
export function packMessages(messages: readonly OutMessage[]): Uint8Array {
  return gzipSync(
    JSON.stringify(
      messages.map((m) => ({
        topic: m.topic,
        key: m.key,
        value: m.value,
        headers: m.headers ?? {},
      })),
    ),
  );
}

/**
 * The envelope an item holds: its messages packed (`packed` in an outbox item, `obx` in a
 * carrier), or, in a carrier written with `derived` (see `commit`), rebuilt from the item by its
 * source's `derive`. One that cannot be rebuilt is an error, never an empty commit: the relay
 * pass fails and says which item.
 */
export function envelopeOf(
  item: Record<string, unknown>,
  derive?: CarrierSource['derive'],
): Envelope {
  const first = parseAt(String(item[ATTR.at]));
  const packed = item.packed ?? item[ATTR.packed];
  const messages =
    packed instanceof Uint8Array
      ? (JSON.parse(gunzipSync(packed).toString('utf8')) as OutMessage[])
      : derive?.(item);
  if (!messages)
    throw new Error(
      `outbox carrier ${String(item.pk)}/${String(item.sk)} holds no events and they cannot be rebuilt from it`,
    );
  return { id: first.id, createdAtMs: first.ms, messages };
}

/**
 * Attribute names of a stored commit. An outbox item holds `obxw` = `{writer id}#{shard}` and
 * `obxt` = `{createdAtMs, 15 digits}#{first event id}`, the keys of the outbox table's sparse
 * `writer` index, over which the relay finds a stopped writer's commits. An item of another
 * table that carries a commit's events (a "carrier", see `commit`) holds its writer in `obxs`
 * instead (carrier-stream.ts: the relay finds it through the table's stream), `obxt`, and the
 * packed messages in `obx` unless they are derived from the item.
 */
export const ATTR = { writer: 'obxw', at: 'obxt', packed: 'obx' } as const;
/** Index partitions per writer, so one busy writer never makes one hot index partition. */
export const WRITER_SHARDS = 8;
/** The index partition listing every writer's progress item. */
export const WRITERS = 'writers';
/** The id prefix of a writer's progress item in the outbox table. */
export const PROGRESS_PREFIX = 'writer#';

export const atKey = (ms: number, id: string) => `${String(ms).padStart(15, '0')}#${id}`;
export function parseAt(at: string): { ms: number; id: string } {
  const i = at.indexOf('#');
  return { ms: Number(at.slice(0, i)), id: at.slice(i + 1) };
}

/**
 * A table whose items may carry a commit's events: it has a DynamoDB stream (new images), which
 * the relay reads to find them (`CarrierStream`).
 */
export interface CarrierSource {
  table: string;
  /**
   * Rebuilds the messages of a carrier written with `derived` (it holds no `obx`) from the item
   * itself; undefined when the item cannot say what they were.
   */
  derive?: (item: Record<string, unknown>) => OutMessage[] | undefined;
}

/** Outbox items and progress items are kept this long for the relay (TTL, `expiresAt`). */
export const RETENTION_S = 14 * 86_400;
const shardOf = (id: string) =>
  createHash('sha256').update(id).digest().readUInt8(0) % WRITER_SHARDS;

/** A commit's items as written, where its events are, and its `obxt`. */
export interface Placed {
  items: TransactItem[];
  where: { table: string; key: Record<string, unknown> };
  at: string;
}

/**
 * Where a commit's events go: an outbox item in `table`, or, with `carrier` (the index of a Put
 * in `changes` that creates its item), attributes of that item. With `derived` the carrier holds
 * no messages, only the relay's keys.
 */
export function placeCommit(
  changes: TransactItem[],
  env: Envelope,
  o: {
    table: string;
    writerId: string;
    carrier: number | undefined;
    derived: boolean;
    keyAttributes: ((table: string) => readonly string[]) | undefined;
  },
): Placed {
  const at = atKey(env.createdAtMs, env.id);
  const writer = `${o.writerId}#${shardOf(env.id)}`;
  if (o.carrier === undefined) {
    const item: TransactItem = {
      Put: {
        TableName: o.table,
        Item: {
          id: env.id,
          packed: packMessages(env.messages),
          [ATTR.writer]: writer,
          [ATTR.at]: at,
          // Kept for the relay in case this writer stops; TTL removes it at no write cost.
          expiresAt: Math.floor(env.createdAtMs / 1000) + RETENTION_S,
        },
        ConditionExpression: 'attribute_not_exists(id)',
      },
    };
    return { items: [...changes, item], where: { table: o.table, key: { id: env.id } }, at };
  }
  const put = changes[o.carrier]?.Put;
  if (!put?.TableName || !put.Item)
    throw new Error('an outbox carrier must be a Put of the same commit');
  const items = [...changes];
  items[o.carrier] = {
    Put: {
      ...put,
      Item: {
        ...put.Item,
        ...(o.derived ? {} : { [ATTR.packed]: packMessages(env.messages) }),
        [STREAM_WRITER_ATTR]: writer,
        [ATTR.at]: at,
      },
    },
  };
  const names = o.keyAttributes?.(put.TableName) ?? ['pk', 'sk'];
  const key = Object.fromEntries(names.map((k) => [k, put.Item![k]]));
  return { items, where: { table: put.TableName, key }, at };
}

/** Messages published, by path: the writer's own (fast, retry) and the relay's. */
export function publishedCounter(registry: Registry) {
  return getOrCreate(
    registry,
    'svc_outbox_published_total',
    () =>
      new Counter({
        name: 'svc_outbox_published_total',
        help: 'Outbox messages published, by path (fast = at write time, retry = later by the writer itself, relay = by the relay for a writer that stopped)',
        labelNames: ['path'],
        registers: [registry],
      }),
  );
}
