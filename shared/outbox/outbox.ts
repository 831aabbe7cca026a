import {
  BatchGetCommand,
  DeleteCommand,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { createHash, randomUUID } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';
import { Gauge, Counter, Histogram, type Registry } from 'prom-client';
import type { Logger } from '../logger.js';
import { STEP_SECONDS_BUCKETS, getOrCreate } from '../metrics.js';
import { backoffMs } from '../backoff.js';
import { AppError } from '../errors.js';
import { ulid } from 'ulid';
import { GroupCommit, type TransactItem } from '../storage/group-commit.js';
import type { StoreOutages } from '../storage/outages.js';
import type { OutMessage, Producer } from '../bus/producer.js';
import { withTraceHeaders } from '../telemetry.js';
import { isConditionFailure, updateIfHolds, writeItems } from '../storage/dynamo.js';
import { CarrierStream, STREAM_WRITER_ATTR } from './carrier-stream.js';
import { DescribeTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';

export type { TransactItem };

export interface OutboxItem extends OutMessage {
  /** The event id. */
  id: string;
  createdAtMs: number;
}

/**
 * The messages of one commit, in order, under the first one's id and the commit's creation time
 * (both in `obxt`).
 */
interface Envelope {
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
function envelopeOf(item: Record<string, unknown>, derive?: CarrierSource['derive']): Envelope {
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
const WRITERS = 'writers';
const PROGRESS_PREFIX = 'writer#';
const RETENTION_S = 14 * 86_400;

const atKey = (ms: number, id: string) => `${String(ms).padStart(15, '0')}#${id}`;
function parseAt(at: string): { ms: number; id: string } {
  const i = at.indexOf('#');
  return { ms: Number(at.slice(0, i)), id: at.slice(i + 1) };
}
const shardOf = (id: string) =>
  createHash('sha256').update(id).digest().readUInt8(0) % WRITER_SHARDS;

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

export interface OutboxDeps {
  doc: DynamoDBDocumentClient;
  table: string;
  producer: Producer;
  log: Logger;
  registry: Registry;
  /** The key attribute names of a table, by full name (group commit keeps items distinct). */
  keyAttributes?: (table: string) => readonly string[];
  /** The store's outages: committed writes are checked again after one (group commit). */
  storeOutages?: StoreOutages;
  /** The outbox table's index over `obxw` / `obxt` (default `writer`). */
  writerIndex?: string;
  /** Other tables whose items carry events (`commit`'s `carrier`), for the relay to search. */
  carriers?: CarrierSource[];
  /** The clients the relay reads the carrier tables' streams with (needed with `carriers`). */
  streams?: { client: DynamoDBClient; streams: DynamoDBStreamsClient };
}

function outboxMetrics(registry: Registry) {
  return {
    published: getOrCreate(
      registry,
      'svc_outbox_published_total',
      () =>
        new Counter({
          name: 'svc_outbox_published_total',
          help: 'Outbox messages published, by path (fast = at write time, retry = later by the writer itself, relay = by the relay for a writer that stopped)',
          labelNames: ['path'],
          registers: [registry],
        }),
    ),
    backlog: getOrCreate(
      registry,
      'svc_outbox_backlog',
      () =>
        new Gauge({
          name: 'svc_outbox_backlog',
          help: 'Commits of this process stored but not yet published to Kafka',
          registers: [registry],
        }),
    ),
    oldest: getOrCreate(
      registry,
      'svc_outbox_oldest_age_seconds',
      () =>
        new Gauge({
          name: 'svc_outbox_oldest_age_seconds',
          help: 'Age of the oldest stored but unpublished commit of this process (0 when none): the outbox lag',
          registers: [registry],
        }),
    ),
    passes: getOrCreate(
      registry,
      'svc_outbox_relay_passes_total',
      () =>
        new Counter({
          name: 'svc_outbox_relay_passes_total',
          help: 'Relay passes by result (ok, kafka_unavailable, failed)',
          labelNames: ['result'],
          registers: [registry],
        }),
    ),
    commitSeconds: getOrCreate(
      registry,
      'svc_outbox_commit_seconds',
      () =>
        new Histogram({
          name: 'svc_outbox_commit_seconds',
          help: 'Commits of a change and its events that were stored, by step: store (waiting for a group-commit slot, then the transaction) and publish (the fast-path publish to Kafka, as long as the commit waited for it)',
          labelNames: ['step'],
          buckets: STEP_SECONDS_BUCKETS,
          registers: [registry],
        }),
    ),
    recovered: getOrCreate(
      registry,
      'svc_outbox_writers_recovered_total',
      () =>
        new Counter({
          name: 'svc_outbox_writers_recovered_total',
          help: 'Writers that stopped (no progress within OUTBOX_WRITER_STALE_MS) whose events the relay published from their watermark',
          registers: [registry],
        }),
    ),
  };
}

export interface OutboxOptions {
  /**
   * How long a write waits for its events' fast-path publish before it answers anyway (the
   * events are already stored; the writer publishes them itself later, or the relay if it dies).
   */
  publishWaitMs?: number;
  /** Commits one relay or retry step publishes at once. */
  relayBatch?: number;
  /**
   * Commit transactions in flight at once; commits made meanwhile wait and leave together in
   * one transaction of up to 100 items (group commit).
   */
  transactionsInFlight?: number;
  /** Under load, how long a commit finding no transaction in flight waits for others (ms). */
  lingerMs?: number;
  /** How often the writer retries its unpublished commits and saves its progress item. */
  retryIntervalMs?: number;
  /** A writer whose progress item is older than this is taken for stopped by the relay. */
  staleMs?: number;
  /** Stored but unpublished commits a writer holds before it refuses new ones (503). */
  maxOpen?: number;
  /**
   * A commit whose transaction failed without an answer is dropped once found absent twice, the
   * second time at least this long after the failure (default 60 s).
   */
  unknownSettleMs?: number;
}

/** A commit of this writer that is not published yet. */
interface Open {
  env: Envelope;
  /** writing: its transaction is in flight; committed; unknown: the transaction failed without saying whether it applied. */
  state: 'writing' | 'committed' | 'unknown';
  /** A publish of it is in flight (fast path or retry). */
  sending: boolean;
  /** Where its events are stored (to look up an `unknown` one). */
  where: { table: string; key: Record<string, unknown> };
  at: string;
  /** unknown: when the transaction failed, and when it was last found absent. */
  failedAt?: number;
  absentAt?: number;
}

/** Errors after which the transaction certainly did not apply. */
export function certainlyNotApplied(err: unknown): boolean {
  if (err instanceof AppError) return true;
  const name = (err as { name?: string } | undefined)?.name;
  return name === 'TransactionCanceledException' || name === 'ValidationException';
}

/** A failed transaction whose outcome is unknown is taken for not applied once found absent this long after it failed, twice. */
const UNKNOWN_SETTLE_MS = 60_000;

/** What a writer's progress item (undefined: gone) says of its commits the stream showed. */
function settlement(
  p: Record<string, unknown> | undefined,
): Parameters<CarrierStream['settle']>[1] {
  if (!p) return { gone: true };
  return {
    below: atKey(Number(p.watermark), ''),
    ...(typeof p.after === 'string' ? { after: p.after } : {}),
  };
}

/**
 * Transactional outbox without deletes. `commit` writes a change and its events in one
 * TransactWriteItems (the events together in one outbox item, or inside one of the change's own
 * items, the carrier), then publishes the events at once (fast path). Nothing is written when
 * they are published: each writer (one per process, `writerId`) keeps its unpublished commits in
 * memory, publishes them itself when Kafka is back, and saves a progress item once a second:
 * its watermark (every commit created before it is published) and a heartbeat. If a writer stops
 * (killed, or its machine gone), its progress item goes stale, and the relay (`relayOnce`, any
 * process) finds the writer's commits from its watermark on, outbox items through the `writer`
 * index and carriers through their tables' streams, publishes them, then deletes the progress
 * item. Outbox items expire by TTL (`expiresAt`, 14 days; TTL deletes cost no write units on
 * AWS). Delivery is at-least-once: consumers deduplicate by event id (see idempotency.ts).
 */
export class Outbox {
  private readonly m;
  /** This writer's unpublished commits, in creation order (a Map keeps insertion order). */
  private readonly open = new Map<number, Open>();
  private seq = 0;
  private lastMs = 0;
  private closed = false;
  private registered: Promise<void> | undefined;
  private loop: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  private failures = 0;
  private beat: NodeJS.Timeout | undefined;
  private saving = false;
  /** Relay: each writer's heartbeat as last read, and since when (this process's clock) it has not changed. */
  private readonly observed = new Map<string, { beat: number; since: number }>();

  /** This process's writer id: the partition of its commits in the writer index. */
  readonly writerId = `w${ulid()}`;
  /** Concurrent commits share TransactWriteItems requests (group commit). */
  readonly group: GroupCommit;

  constructor(
    private readonly d: OutboxDeps,
    private readonly o: OutboxOptions = {},
  ) {
    if (d.carriers?.length && !d.streams)
      throw new Error('carrier tables are found through their streams: give the streams client');
    this.m = outboxMetrics(d.registry);
    this.group = new GroupCommit(
      (items) =>
        d.doc.send(
          new TransactWriteCommand({ TransactItems: items, ClientRequestToken: randomUUID() }),
        ),
      {
        sendSingle: (item) => writeItems(d.doc, [item]),
        readItem: async (put) => {
          const names = d.keyAttributes?.(put.TableName!) ?? ['pk', 'sk'];
          const Key = Object.fromEntries(names.map((k) => [k, put.Item![k]]));
          return (
            await d.doc.send(
              new GetCommand({ TableName: put.TableName, Key, ConsistentRead: true }),
            )
          ).Item;
        },
        maxInFlight: o.transactionsInFlight ?? 1,
        lingerMs: o.lingerMs ?? 0,
        keyAttributes: d.keyAttributes ?? (() => ['pk', 'sk', 'id']),
        registry: d.registry,
        log: d.log,
        ...(d.storeOutages ? { outages: d.storeOutages } : {}),
      },
    );
  }

  /** Creation times never go back within a writer, so its watermark is exact. */
  private stamp(): number {
    this.lastMs = Math.max(this.lastMs, Date.now());
    return this.lastMs;
  }

  /** Every commit of this writer created before the watermark is published. */
  private watermark(): number {
    for (const e of this.open.values()) return e.env.createdAtMs;
    return this.stamp();
  }

  private progressItem(): Record<string, unknown> {
    const now = Date.now();
    return {
      id: `${PROGRESS_PREFIX}${this.writerId}`,
      [ATTR.writer]: WRITERS,
      [ATTR.at]: this.writerId,
      writer: this.writerId,
      watermark: this.watermark(),
      heartbeatAt: now,
      expiresAt: Math.floor(now / 1000) + RETENTION_S,
    };
  }

  /**
   * The progress item exists before this writer's first commit can land (the relay finds a
   * writer only through it); the retry loop starts with it.
   */
  private register(): Promise<void> {
    this.registered ??= this.d.doc
      .send(new PutCommand({ TableName: this.d.table, Item: this.progressItem() }))
      .then(() => this.schedule())
      .catch((err: unknown) => {
        this.registered = undefined;
        throw err;
      });
    return this.registered;
  }

  private schedule(): void {
    if (this.closed) return;
    const every = this.o.retryIntervalMs ?? 1_000;
    const pause = every * Math.min(1 + this.failures, 10);
    this.loop = setTimeout(() => {
      this.ticking = this.tick().finally(() => {
        this.ticking = undefined;
        this.schedule();
      });
    }, pause);
    this.loop.unref();
    // The heartbeat has a timer of its own: slow publishing or look-ups never delay it.
    this.beat ??= setInterval(() => void this.saveProgress(), every);
    this.beat.unref();
  }

  /** Saves the progress item (one save in flight at a time). */
  private async saveProgress(): Promise<void> {
    if (this.saving || this.closed) return;
    this.saving = true;
    try {
      await this.d.doc.send(new PutCommand({ TableName: this.d.table, Item: this.progressItem() }));
    } catch (err) {
      this.d.log.warn({ err }, 'outbox progress not saved; retrying');
    } finally {
      this.saving = false;
    }
  }

  /** One step of the writer's own loop: look up unknown commits, retry unpublished ones. */
  private async tick(): Promise<void> {
    try {
      await this.resolveUnknown();
      const ok = await this.retryOnce();
      this.failures = ok ? 0 : this.failures + 1;
    } catch (err) {
      this.failures++;
      this.d.log.warn({ err }, 'outbox retry step failed');
    }
    this.gauges();
  }

  private gauges(): void {
    let n = 0;
    let oldest: number | undefined;
    for (const e of this.open.values()) {
      if (e.state === 'writing') continue;
      n++;
      oldest ??= e.env.createdAtMs;
    }
    this.m.backlog.set(n);
    this.m.oldest.set(oldest === undefined ? 0 : (Date.now() - oldest) / 1000);
  }

  /** Where a commit's events go: an outbox item, or attributes of its carrier item. */
  private place(
    changes: TransactItem[],
    env: Envelope,
    carrier: number | undefined,
    derived: boolean,
  ): { items: TransactItem[]; where: Open['where']; at: string } {
    const at = atKey(env.createdAtMs, env.id);
    const writer = `${this.writerId}#${shardOf(env.id)}`;
    if (carrier === undefined) {
      const packed = packMessages(env.messages);
      const item: TransactItem = {
        Put: {
          TableName: this.d.table,
          Item: {
            id: env.id,
            packed,
            [ATTR.writer]: writer,
            [ATTR.at]: at,
            // Kept for the relay in case this writer stops; TTL removes it at no write cost.
            expiresAt: Math.floor(env.createdAtMs / 1000) + RETENTION_S,
          },
          ConditionExpression: 'attribute_not_exists(id)',
        },
      };
      return { items: [...changes, item], where: { table: this.d.table, key: { id: env.id } }, at };
    }
    const put = changes[carrier]?.Put;
    if (!put?.TableName || !put.Item)
      throw new Error('an outbox carrier must be a Put of the same commit');
    const items = [...changes];
    items[carrier] = {
      Put: {
        ...put,
        Item: {
          ...put.Item,
          ...(derived ? {} : { [ATTR.packed]: packMessages(env.messages) }),
          [STREAM_WRITER_ATTR]: writer,
          [ATTR.at]: at,
        },
      },
    };
    const names = this.d.keyAttributes?.(put.TableName) ?? ['pk', 'sk'];
    const key = Object.fromEntries(names.map((k) => [k, put.Item![k]]));
    return { items, where: { table: put.TableName, key }, at };
  }

  /**
   * Writes `changes` and the messages atomically, then publishes. The messages go into one
   * outbox item, or, with `carrier` (the index of a Put in `changes` that creates its item), into
   * that item itself, so the commit writes no item of its own for them. Resolves once the
   * transaction committed, whether or not the fast path published: a failed or slow publish is
   * retried by this writer (or the relay, if it stops), not the caller's error. The client request
   * token makes the SDK's retry of a transaction that timed out after it was applied succeed
   * instead of failing on its own outbox item. With `derived` the carrier does not hold the
   * messages either, only the index keys: its table's `CarrierSource.derive` rebuilds them from
   * the item, byte for byte (trace headers aside), for the relay.
   */
  async commit(
    changes: TransactItem[],
    messages: OutboxItem[],
    o: {
      carrier?: number;
      derived?: boolean;
      signal?: AbortSignal | undefined;
      /** A commit of its carrier alone is sent as a request of its own (`GroupCommit.single`). */
      alone?: boolean;
    } = {},
  ): Promise<{ published: boolean }> {
    if (messages.length === 0) {
      await this.group.write(changes, o.signal);
      return { published: true };
    }
    if (this.open.size >= (this.o.maxOpen ?? 50_000))
      throw new AppError(
        'SVC_UNAVAILABLE',
        'Too many events are waiting for Kafka; retry shortly',
        { retryAfterS: 5 },
      );
    await this.register();
    const env: Envelope = {
      id: messages[0]!.id,
      createdAtMs: this.stamp(),
      // The active trace (the HTTP request's) travels with each event, through the relay too.
      messages: messages.map((m) => ({
        topic: m.topic,
        key: m.key,
        value: m.value,
        headers: withTraceHeaders(m.headers),
      })),
    };
    if (o.derived && o.carrier === undefined)
      throw new Error('only a carrier can hold derived events');
    const placed = this.place(changes, env, o.carrier, o.derived === true);
    const n = this.seq++;
    const entry: Open = {
      env,
      state: 'writing',
      sending: false,
      where: placed.where,
      at: placed.at,
    };
    this.open.set(n, entry);
    const stored = this.m.commitSeconds.startTimer({ step: 'store' });
    try {
      const [only, ...more] = placed.items;
      if (o.alone && only && more.length === 0)
        await this.group.single(only, o.signal, (stored) => stored[ATTR.at] === placed.at);
      else await this.group.write(placed.items, o.signal);
      stored();
    } catch (err) {
      if (certainlyNotApplied(err)) this.open.delete(n);
      else {
        // A timeout or a lost connection: it may have applied (or may still). Looked up later.
        entry.state = 'unknown';
        entry.failedAt = Date.now();
      }
      throw err;
    }
    entry.state = 'committed';
    const published = this.m.commitSeconds.startTimer({ step: 'publish' });
    try {
      return { published: await this.publishFast(n, entry) };
    } finally {
      published();
    }
  }

  /**
   * The fast path: skipped while Kafka is failing (the retry loop probes it), and waited for at
   * most `publishWaitMs`; a publish still in flight then finishes in the background.
   */
  private async publishFast(n: number, entry: Open): Promise<boolean> {
    if (!this.d.producer.healthy) return false;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), this.o.publishWaitMs ?? 1_000);
    });
    try {
      const published = await Promise.race([this.publish([[n, entry]], 'fast'), late]);
      // Not published in time: later writes skip the wait until a send succeeds again.
      if (!published) this.d.producer.markSlow();
      return published;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Publishes this writer's commits; false (kept) when Kafka could not take them. */
  private async publish(entries: [number, Open][], path: 'fast' | 'retry'): Promise<boolean> {
    for (const [, e] of entries) e.sending = true;
    const messages = entries.flatMap(([, e]) => e.env.messages);
    try {
      await this.d.producer.send(messages);
    } catch (err) {
      this.d.log.warn(
        { err, count: messages.length, path },
        'outbox publish failed; the writer retries',
      );
      return false;
    } finally {
      for (const [, e] of entries) e.sending = false;
    }
    this.m.published.inc({ path }, messages.length);
    for (const [n] of entries) this.open.delete(n);
    return true;
  }

  /** Publishes committed commits the fast path did not, oldest first, a batch at a time. */
  private async retryOnce(): Promise<boolean> {
    const limit = this.o.relayBatch ?? 500;
    const minAge = this.o.publishWaitMs ?? 1_000;
    const now = Date.now();
    for (;;) {
      const batch: [number, Open][] = [];
      for (const entry of this.open) {
        const e = entry[1];
        if (e.state !== 'committed' || e.sending || now - e.env.createdAtMs < minAge) continue;
        if (batch.push(entry) === limit) break;
      }
      if (batch.length === 0) return true;
      if (!(await this.publish(batch, 'retry'))) return false;
    }
  }

  /**
   * Commits whose transaction failed without an answer: found stored, they are published like
   * any other; found absent twice, the second time at least `UNKNOWN_SETTLE_MS` after the
   * failure (a stalled store may apply a request it had already received once it resumes), they
   * are dropped: their caller was answered with an error and nothing of them is stored.
   */
  private async resolveUnknown(): Promise<void> {
    const now = Date.now();
    // Bounded per step: after a long outage thousands may wait, and each look-up is a read.
    let budget = 100;
    for (const [n, e] of this.open) {
      if (e.state !== 'unknown') continue;
      if (budget-- === 0) break;
      if (
        e.absentAt !== undefined &&
        now - e.absentAt < Math.min(5_000, this.o.unknownSettleMs ?? 5_000)
      )
        continue;
      const r = await this.d.doc.send(
        new GetCommand({
          TableName: e.where.table,
          Key: e.where.key,
          ConsistentRead: true,
          ProjectionExpression: '#at',
          ExpressionAttributeNames: { '#at': ATTR.at },
        }),
      );
      if (r.Item && r.Item[ATTR.at] === e.at) {
        e.state = 'committed';
        continue;
      }
      if (
        e.absentAt !== undefined &&
        now - (e.failedAt ?? 0) >= (this.o.unknownSettleMs ?? UNKNOWN_SETTLE_MS)
      )
        this.open.delete(n);
      else e.absentAt = now;
    }
  }

  /**
   * Waits until every commit of this writer is published or dropped (tests, shutdown): true
   * then, false if it is closed or `timeoutMs` passed first.
   */
  async drain(timeoutMs = 30_000): Promise<boolean> {
    const until = Date.now() + timeoutMs;
    while (!this.closed && Date.now() < until) {
      let waiting = false;
      for (const e of this.open.values()) if (e.state !== 'writing') waiting = true;
      if (!waiting) return true;
      await new Promise((r) => setTimeout(r, 50));
    }
    return false;
  }

  /**
   * Shutdown: one last try to publish what is left (for at most `timeoutMs`), then the progress
   * item is deleted if nothing is left, or saved for the relay if something is.
   */
  async close(timeoutMs = 2_000): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.loop) clearTimeout(this.loop);
    if (this.beat) clearInterval(this.beat);
    await this.ticking?.catch(() => undefined);
    if (this.registered === undefined) return;
    await Promise.race([
      this.retryOnce().catch(() => false),
      new Promise((r) => setTimeout(r, timeoutMs).unref()),
    ]);
    // A commit still being written counts too: it may land after this process is gone.
    const left = this.open.size > 0;
    try {
      if (left)
        await this.d.doc.send(
          new PutCommand({
            TableName: this.d.table,
            // Stale at once: the relay takes it over on its next pass.
            Item: { ...this.progressItem(), heartbeatAt: 0 },
          }),
        );
      else
        await this.d.doc.send(
          new DeleteCommand({
            TableName: this.d.table,
            Key: { id: `${PROGRESS_PREFIX}${this.writerId}` },
          }),
        );
    } catch (err) {
      this.d.log.warn({ err, left }, 'outbox progress not saved at shutdown; the relay covers it');
    }
  }

  /** Stops without a word, as a killed process would (tests). */
  abandon(): void {
    this.closed = true;
    if (this.loop) clearTimeout(this.loop);
    if (this.beat) clearInterval(this.beat);
  }

  /**
   * One relay pass: for every writer whose heartbeat this relay has seen unchanged for
   * `staleMs` (it stopped), publishes its commits from its watermark on, a bounded batch at a
   * time, moving its watermark after each batch, then deletes its progress item. Stops at the
   * first batch Kafka does not take. Returns how many messages were published.
   */
  async relayOnce(o: { staleMs?: number; now?: number } = {}): Promise<number> {
    try {
      return await this.relayPass(o.staleMs ?? this.o.staleMs ?? 10_000, o.now ?? Date.now());
    } catch (err) {
      this.observed.clear();
      this.m.passes.inc({ result: 'failed' });
      throw err;
    }
  }

  /**
   * Fails unless every carrier table has its stream on (the process's start calls it after
   * `applyTables`): without it the relay could not find a stopped writer's carriers.
   */
  async assertStreams(): Promise<void> {
    for (const c of this.d.carriers ?? []) {
      const t = await this.d.streams!.client.send(new DescribeTableCommand({ TableName: c.table }));
      if (t.Table?.StreamSpecification?.StreamEnabled !== true)
        throw new Error(
          `table ${c.table} has no stream: the outbox relay finds its carriers through it (infra/definitions/tables.ts)`,
        );
    }
  }

  /** The relay's readers of the carrier tables' streams, made at its first pass. */
  private streamReaders: { src: CarrierSource; reader: CarrierStream }[] | undefined;

  private readers(): { src: CarrierSource; reader: CarrierStream }[] {
    if (this.streamReaders) return this.streamReaders;
    const clients = this.d.streams;
    this.streamReaders = (this.d.carriers ?? []).map((src) => ({
      src,
      reader: new CarrierStream({
        client: clients!.client,
        streams: clients!.streams,
        doc: this.d.doc,
        table: src.table,
        keys: this.d.keyAttributes?.(src.table) ?? ['pk', 'sk'],
        checkpointTable: this.d.table,
        log: this.d.log,
        registry: this.d.registry,
      }),
    }));
    return this.streamReaders;
  }

  private async relayPass(staleMs: number, now: number): Promise<number> {
    let sent = 0;
    // The streams are read before the progress items: a commit read here whose writer's
    // watermark (read after) has passed it was published. At most every 5 s, unless a writer is
    // to be taken over (below).
    const readers = this.readers();
    const read = async (force: boolean) => {
      let caughtUp = true;
      let fresh = true;
      for (const r of readers) {
        const x = await r.reader.poll(force);
        caughtUp &&= x.caughtUp;
        fresh &&= x.read;
      }
      return { caughtUp, fresh };
    };
    let streams = await read(false);
    const writers = await this.listWriters();
    for (const w of this.observed.keys()) if (!writers.includes(w)) this.observed.delete(w);
    await this.settleUnlisted(readers, writers);
    for (const w of writers) {
      if (w === this.writerId) {
        for (const r of readers) r.reader.settle(w, { below: atKey(this.watermark(), '') });
        continue;
      }
      const p = await this.progressOf(w);
      for (const r of readers) r.reader.settle(w, settlement(p));
      if (!p || !this.stopped(w, p, now, staleMs)) continue;
      // Stopped: the streams are read in this pass, after it stopped, so they hold all of its
      // commits; a read short of its end may not yet.
      if (!streams.fresh) {
        streams = await read(true);
        for (const r of readers) r.reader.settle(w, settlement(p));
      }
      if (!streams.caughtUp) continue;
      const r = await this.recoverWriter(w, p);
      sent += r.sent;
      if (!r.ok) {
        this.m.passes.inc({ result: 'kafka_unavailable' });
        return sent;
      }
    }
    for (const r of readers) await r.reader.saveCheckpoints();
    this.m.passes.inc({ result: 'ok' });
    if (sent > 0) this.d.log.info({ sent }, 'outbox relay published events of stopped writers');
    return sent;
  }

  private async progressOf(w: string): Promise<Record<string, unknown> | undefined> {
    return (
      await this.d.doc.send(
        new GetCommand({
          TableName: this.d.table,
          Key: { id: `${PROGRESS_PREFIX}${w}` },
          ConsistentRead: true,
        }),
      )
    ).Item;
  }

  /**
   * Stopped: its heartbeat has not moved for `staleMs` as this relay saw it, on its own clock,
   * with the store answering all along (a pass that fails starts the watch again). So no clocks
   * of two machines are compared, and a store outage, during which no writer can save progress,
   * does not make every writer look stopped. 0: it closed with commits left over.
   */
  private stopped(w: string, p: Record<string, unknown>, now: number, staleMs: number): boolean {
    const beat = Number(p.heartbeatAt);
    let seen = this.observed.get(w);
    if (seen?.beat !== beat) this.observed.set(w, (seen = { beat, since: now }));
    return beat === 0 || now - seen.since >= staleMs;
  }

  /**
   * Writers the streams hold commits of that the (eventually consistent) index did not list:
   * gone (closed with nothing left, or taken over), or too new to be listed yet.
   */
  private async settleUnlisted(
    readers: { reader: CarrierStream }[],
    writers: readonly string[],
  ): Promise<void> {
    const unlisted = new Set(readers.flatMap((r) => r.reader.writers()));
    for (const w of unlisted) {
      if (w === this.writerId || writers.includes(w)) continue;
      const s = settlement(await this.progressOf(w));
      for (const r of readers) r.reader.settle(w, s);
    }
  }

  private async listWriters(): Promise<string[]> {
    const out: string[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const page = await this.d.doc.send(
        new QueryCommand({
          TableName: this.d.table,
          IndexName: this.d.writerIndex ?? 'writer',
          KeyConditionExpression: '#w = :w',
          ExpressionAttributeNames: { '#w': ATTR.writer },
          ExpressionAttributeValues: { ':w': WRITERS },
          ExclusiveStartKey: start,
        }),
      );
      for (const i of page.Items ?? []) out.push(String(i[ATTR.at]));
      start = page.LastEvaluatedKey;
    } while (start);
    return out;
  }

  /** Publishes a stopped writer's commits after its watermark, in creation order. */
  private async recoverWriter(
    w: string,
    p: Record<string, unknown>,
  ): Promise<{ sent: number; ok: boolean }> {
    const limit = this.o.relayBatch ?? 500;
    const seenBeat = Number(p.heartbeatAt);
    let after = typeof p.after === 'string' ? p.after : undefined;
    const from = atKey(Number(p.watermark), '');
    let sent = 0;
    for (;;) {
      const found = await this.indexedCommits(w, after, from, limit);
      for (const r of this.readers())
        for (const h of r.reader.heldFor(w, after).slice(0, limit))
          found.push({ table: r.src.table, key: h.key, at: h.at });
      found.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
      const batch = found.slice(0, limit);
      if (batch.length === 0) {
        const deleted = await this.d.doc
          .send(
            new DeleteCommand({
              TableName: this.d.table,
              Key: { id: `${PROGRESS_PREFIX}${w}` },
              ConditionExpression: 'heartbeatAt = :hb',
              ExpressionAttributeValues: { ':hb': seenBeat },
            }),
          )
          .then(
            () => true,
            (err: unknown) => {
              if (!isConditionFailure(err)) throw err;
              return false;
            },
          );
        // Came back meanwhile (its heartbeat moved): it publishes its own commits.
        if (deleted) for (const r of this.readers()) r.reader.settle(w, { gone: true });
        this.m.recovered.inc();
        this.d.log.warn({ writer: w, sent }, 'outbox relay took over a stopped writer');
        return { sent, ok: true };
      }
      const envelopes = await this.fetchEnvelopes(batch);
      const messages = envelopes.flatMap((e) => e.messages);
      try {
        if (messages.length > 0) await this.d.producer.send(messages);
      } catch (err) {
        this.d.log.warn({ err, writer: w, count: messages.length }, 'outbox relay publish failed');
        return { sent, ok: false };
      }
      this.m.published.inc({ path: 'relay' }, messages.length);
      sent += messages.length;
      after = batch[batch.length - 1]!.at;
      const moved = await updateIfHolds(this.d.doc, {
        TableName: this.d.table,
        Key: { id: `${PROGRESS_PREFIX}${w}` },
        UpdateExpression: 'SET #after = :after',
        ConditionExpression: 'heartbeatAt = :hb',
        ExpressionAttributeNames: { '#after': 'after' },
        ExpressionAttributeValues: { ':after': after, ':hb': seenBeat },
      });
      // The writer came back (a new heartbeat): it publishes its own commits again.
      if (!moved) return { sent, ok: true };
      for (const r of this.readers()) r.reader.settle(w, { after });
    }
  }

  /** A writer's outbox items after `after` (from `from` on when undefined), by its index. */
  private async indexedCommits(
    w: string,
    after: string | undefined,
    from: string,
    limit: number,
  ): Promise<{ table: string; key: Record<string, unknown>; at: string }[]> {
    const found: { table: string; key: Record<string, unknown>; at: string }[] = [];
    for (let s = 0; s < WRITER_SHARDS; s++) {
      const page = await this.d.doc.send(
        new QueryCommand({
          TableName: this.d.table,
          IndexName: this.d.writerIndex ?? 'writer',
          KeyConditionExpression:
            after === undefined ? '#w = :w AND #at >= :from' : '#w = :w AND #at > :from',
          ExpressionAttributeNames: { '#w': ATTR.writer, '#at': ATTR.at },
          ExpressionAttributeValues: { ':w': `${w}#${s}`, ':from': after ?? from },
          Limit: limit,
        }),
      );
      for (const i of page.Items ?? [])
        found.push({ table: this.d.table, key: { id: i.id }, at: String(i[ATTR.at]) });
    }
    return found;
  }

  /** The envelopes stored in these items (consistent reads, 100 keys a request), in order. */
  private async fetchEnvelopes(
    refs: { table: string; key: Record<string, unknown>; at: string }[],
  ): Promise<Envelope[]> {
    const byAt = new Map<string, Envelope>();
    for (let i = 0; i < refs.length; i += 100) {
      const chunk = refs.slice(i, i + 100);
      let request: Record<string, { Keys: Record<string, unknown>[]; ConsistentRead: boolean }> =
        {};
      for (const r of chunk) {
        request[r.table] ??= { Keys: [], ConsistentRead: true };
        request[r.table]!.Keys.push(r.key);
      }
      for (let round = 0; Object.keys(request).length > 0; round++) {
        if (round > 0)
          await new Promise((r) => setTimeout(r, backoffMs(round, { baseMs: 50, maxMs: 1_000 })));
        const res = await this.d.doc.send(new BatchGetCommand({ RequestItems: request }));
        for (const [table, items] of Object.entries(res.Responses ?? {})) {
          const derive = this.d.carriers?.find((c) => c.table === table)?.derive;
          for (const item of items) {
            const at: unknown = item[ATTR.at];
            if (typeof at === 'string') byAt.set(at, envelopeOf(item, derive));
          }
        }
        request = (res.UnprocessedKeys ?? {}) as typeof request;
      }
    }
    // An item that no longer holds the commit (gone, or scrubbed of the events it carried) is
    // skipped.
    return refs.flatMap((r) => byAt.get(r.at) ?? []);
  }
}

/** Runs `relayOnce` every `intervalMs` until stopped. */
export function startRelay(
  outbox: Outbox,
  o: { intervalMs: number; staleMs?: number; log: Logger },
) {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> = Promise.resolve();
  let stopped = false;
  let failures = 0;
  const tick = () => {
    running = outbox
      .relayOnce(o.staleMs === undefined ? {} : { staleMs: o.staleMs })
      .then(
        () => (failures = 0),
        (err: unknown) => {
          failures++;
          o.log.warn({ err, failures }, 'outbox relay pass failed');
        },
      )
      .finally(() => {
        // A failing store is not hammered: the pause grows to 10 intervals at most.
        if (!stopped) timer = setTimeout(tick, o.intervalMs * Math.min(1 + failures, 10));
      });
  };
  timer = setTimeout(tick, 0);
  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}
