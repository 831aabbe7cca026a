import { DeleteCommand, GetCommand, PutCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { randomUUID } from 'node:crypto';
import { Gauge, Histogram, type Registry } from 'prom-client';
import { ulid } from 'ulid';
import type { OutMessage } from '../../bus/producer.js';
import { AppError } from '../../errors.js';
import { STEP_SECONDS_BUCKETS, getOrCreate } from '../../metrics.js';
import { writeItems } from '../dynamo.js';
import { GroupCommit, type TransactItem } from '../group-commit.js';
import { withTraceHeaders } from '../../telemetry.js';
import {
  ATTR,
  PROGRESS_PREFIX,
  RETENTION_S,
  WRITERS,
  placeCommit,
  publishedCounter,
  type Envelope,
  type OutboxTableDeps,
  type Placed,
} from './commits.js';

export type { TransactItem };

export interface OutboxItem extends OutMessage {
  /** The event id. */
  id: string;
  createdAtMs: number;
}

export type OutboxDeps = OutboxTableDeps;

function outboxMetrics(registry: Registry) {
  return {
    published: publishedCounter(registry),
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
  };
}

export interface OutboxOptions {
  /**
   * How long a write waits for its events' fast-path publish before it answers anyway (the
   * events are already stored; the writer publishes them itself later, or the relay if it dies).
   */
  publishWaitMs?: number;
  /** Commits one retry step publishes at once. */
  retryBatch?: number;
  /**
   * Commit transactions in flight at once; commits made meanwhile wait and leave together in
   * one transaction of up to 100 items (group commit).
   */
  transactionsInFlight?: number;
  /** How often the writer retries its unpublished commits and saves its progress item. */
  retryIntervalMs?: number;
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
  where: Placed['where'];
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

/**
 * Transactional outbox without deletes. `commit` writes a change and its events in one
 * TransactWriteItems (the events together in one outbox item, or inside one of the change's own
 * items, the carrier), then publishes the events at once (fast path). Nothing is written when
 * they are published: each writer (one per process, `writerId`) keeps its unpublished commits in
 * memory, publishes them itself when Kafka is back, and saves a progress item once a second:
 * its watermark (every commit created before it is published) and a heartbeat. If a writer stops
 * (killed, or its machine gone), its progress item goes stale, and the relay (relay.ts, run by
 * workers/relay) finds the writer's commits from its watermark on, outbox items through the `writer`
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

  /** This process's writer id: the partition of its commits in the writer index. */
  readonly writerId = `w${ulid()}`;
  /** Concurrent commits share TransactWriteItems requests (group commit). */
  readonly group: GroupCommit;
  /** This writer as a relay in the same process sees it: never to be taken over. */
  readonly self = { writerId: this.writerId, watermark: () => this.watermark() };

  constructor(
    private readonly d: OutboxDeps,
    private readonly o: OutboxOptions = {},
  ) {
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
        keyAttributes: d.keyAttributes ?? (() => ['pk', 'sk', 'id']),
        registry: d.registry,
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
    const placed = placeCommit(changes, env, {
      table: this.d.table,
      writerId: this.writerId,
      carrier: o.carrier,
      derived: o.derived === true,
      keyAttributes: this.d.keyAttributes,
    });
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
    const limit = this.o.retryBatch ?? 500;
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
}
