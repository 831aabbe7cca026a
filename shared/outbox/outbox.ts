import {
  BatchWriteCommand,
  ScanCommand,
  TransactWriteCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { randomUUID } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';
import { Gauge, Counter, type Registry } from 'prom-client';
import type { Logger } from '../logger.js';
import { getOrCreate } from '../metrics.js';
import { backoffMs } from '../backoff.js';
import { GroupCommit, type TransactItem } from '../storage/group-commit.js';
import type { StoreOutages } from '../storage/outages.js';
import type { OutMessage, Producer } from '../bus/producer.js';
import { withTraceHeaders } from '../telemetry.js';

export type { TransactItem };

export interface OutboxItem extends OutMessage {
  /** The event id. */
  id: string;
  createdAtMs: number;
}

/**
 * One outbox item: every message of one commit, in order, under the first one's id, stored as
 * gzip-compressed JSON (`packed`): a commit's events repeat most of their text, and DynamoDB
 * bills writes (and the delete) by the kilobyte. `envelopeOf` also reads the shape written
 * before: one message per item, at the top level.
 */
interface Envelope {
  id: string;
  messages: OutMessage[];
  createdAtMs: number;
}

function envelopeOf(item: Record<string, unknown>): Envelope {
  const id = String(item.id);
  const createdAtMs = Number(item.createdAtMs);
  if (item.packed instanceof Uint8Array)
    return {
      id,
      createdAtMs,
      messages: JSON.parse(gunzipSync(item.packed).toString('utf8')) as OutMessage[],
    };
  const { topic, key, value, headers } = item as unknown as OutMessage;
  return { id, createdAtMs, messages: [{ topic, key, value, headers: headers ?? {} }] };
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
}

function outboxMetrics(registry: Registry) {
  return {
    published: getOrCreate(
      registry,
      'svc_outbox_published_total',
      () =>
        new Counter({
          name: 'svc_outbox_published_total',
          help: 'Outbox items published, by path (fast = at write time, relay = re-published later)',
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
          help: 'Outbox items waiting to be published, as of the last complete relay pass',
          registers: [registry],
        }),
    ),
    oldest: getOrCreate(
      registry,
      'svc_outbox_oldest_age_seconds',
      () =>
        new Gauge({
          name: 'svc_outbox_oldest_age_seconds',
          help: 'Age of the oldest unpublished outbox item seen by the relay (0 when none): the relay lag',
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
  };
}

export interface OutboxOptions {
  /**
   * How long a write waits for its events' fast-path publish before it answers anyway (the
   * items are already stored; the relay publishes whatever the fast path did not).
   */
  publishWaitMs?: number;
  /** Items one relay step reads, publishes and deletes before it reads the next. */
  relayBatch?: number;
  /**
   * Commit transactions in flight at once; commits made meanwhile wait and leave together in
   * one transaction of up to 100 items (group commit).
   */
  transactionsInFlight?: number;
}

/**
 * Transactional outbox. `commit` writes a change and its events in one TransactWriteItems (the
 * events together in one outbox item), then publishes the events at once (fast path) and
 * deletes the item. If Kafka
 * cannot take them in time, the items stay and the relay (`relayOnce`) publishes them later.
 * Delivery is at-least-once: consumers deduplicate by event id (see idempotency.ts).
 */
export class Outbox {
  private readonly m;
  /** Published items to delete, in order; a Set, as one id may be published more than once. */
  private readonly pendingDeletes = new Set<string>();
  /** Published items whose delete has not succeeded yet: the relay knows they are out. */
  private readonly published = new Set<string>();
  private deleting: Promise<void> | undefined;
  private closed = false;

  /** Concurrent commits share TransactWriteItems requests (group commit). */
  readonly group: GroupCommit;

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
        maxInFlight: o.transactionsInFlight ?? 4,
        keyAttributes: d.keyAttributes ?? (() => ['pk', 'sk', 'id']),
        registry: d.registry,
        log: d.log,
        ...(d.storeOutages ? { outages: d.storeOutages } : {}),
      },
    );
  }

  /** The outbox Put to include in a transaction: one item for all of a commit's messages. */
  private item(e: Envelope): TransactItem {
    return {
      Put: {
        TableName: this.d.table,
        Item: {
          id: e.id,
          packed: gzipSync(
            JSON.stringify(
              e.messages.map((m) => ({
                topic: m.topic,
                key: m.key,
                value: m.value,
                headers: m.headers ?? {},
              })),
            ),
          ),
          createdAtMs: e.createdAtMs,
          // Never expire before the relay had days to publish it; TTL is a last-resort cap.
          expiresAt: Math.floor(e.createdAtMs / 1000) + 14 * 86400,
        },
        ConditionExpression: 'attribute_not_exists(id)',
      },
    };
  }

  /**
   * Writes `changes` plus one outbox item holding the messages atomically, then publishes.
   * Resolves once the transaction committed, whether or not the fast path published: a failed
   * or slow publish is the relay's work, not the caller's error. The client request token makes
   * the SDK's retry of a transaction that timed out after it was applied succeed instead of
   * failing on its own outbox item.
   */
  async commit(changes: TransactItem[], messages: OutboxItem[]): Promise<{ published: boolean }> {
    // The active trace (the HTTP request's) travels with each event, through the relay too.
    const envelope: Envelope | undefined =
      messages.length > 0
        ? {
            id: messages[0]!.id,
            createdAtMs: Math.min(...messages.map((m) => m.createdAtMs)),
            messages: messages.map((m) => ({
              topic: m.topic,
              key: m.key,
              value: m.value,
              headers: withTraceHeaders(m.headers),
            })),
          }
        : undefined;
    const items = [...changes, ...(envelope ? [this.item(envelope)] : [])];
    await this.group.write(items);
    return { published: envelope ? await this.publishFast(envelope) : true };
  }

  /**
   * The fast path: skipped while Kafka is failing (the relay probes it), and waited for at most
   * `publishWaitMs`; a publish still in flight then finishes (and deletes) in the background.
   */
  private async publishFast(envelope: Envelope): Promise<boolean> {
    if (!this.d.producer.healthy) return false;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), this.o.publishWaitMs ?? 1_000);
    });
    try {
      const published = await Promise.race([this.publish([envelope], 'fast'), late]);
      // Not published in time: later writes skip the wait until a send succeeds again.
      if (!published) this.d.producer.markSlow();
      return published;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Publishes and deletes outbox items; false (items kept) when Kafka could not take them. */
  private async publish(envelopes: Envelope[], path: 'fast' | 'relay'): Promise<boolean> {
    const messages = envelopes.flatMap((e) => e.messages);
    if (messages.length === 0) return true;
    try {
      await this.d.producer.send(messages);
    } catch (err) {
      this.d.log.warn(
        { err, count: messages.length, path },
        'outbox publish failed; left for the relay',
      );
      return false;
    }
    this.m.published.inc({ path }, messages.length);
    // Deletes leave in the background, batched 25 to a request: they are bookkeeping, not
    // part of the answer, and a lost one only makes the relay publish again (consumers dedupe).
    for (const e of envelopes) {
      this.published.add(e.id);
      this.pendingDeletes.add(e.id);
    }
    void this.flushDeletes();
    return true;
  }

  /**
   * Deletes published items, 25 per BatchWriteItem, while any are queued. A failed request
   * is tried again after a pause (the store may be stalled); its ids stay known as published
   * meanwhile, so the relay does not send them again.
   */
  private flushDeletes(): Promise<void> {
    this.deleting ??= (async () => {
      let failures = 0;
      try {
        while (this.pendingDeletes.size > 0) {
          // A batch may not name one key twice (DynamoDB refuses the whole request).
          const ids: string[] = [];
          for (const id of this.pendingDeletes) if (ids.push(id) === 25) break;
          for (const id of ids) this.pendingDeletes.delete(id);
          try {
            const r = await this.d.doc.send(
              new BatchWriteCommand({
                RequestItems: {
                  [this.d.table]: ids.map((id) => ({ DeleteRequest: { Key: { id } } })),
                },
              }),
            );
            const left = new Set<string>();
            for (const it of r.UnprocessedItems?.[this.d.table] ?? []) {
              const id: unknown = it.DeleteRequest?.Key?.id;
              if (typeof id === 'string') left.add(id);
            }
            // Throttled deletes go round again.
            for (const id of ids) {
              if (left.has(id)) this.pendingDeletes.add(id);
              else this.published.delete(id);
            }
            failures = 0;
          } catch (err) {
            for (const id of ids) this.pendingDeletes.add(id);
            if (this.closed) return;
            this.d.log.warn({ err, count: ids.length }, 'outbox delete failed; retrying');
            await new Promise((r) =>
              setTimeout(r, backoffMs(failures++, { baseMs: 200, maxMs: 5_000 })),
            );
          }
        }
      } finally {
        this.deleting = undefined;
      }
    })();
    return this.deleting;
  }

  /** Waits for queued deletes (shutdown, tests); gives up on them once closed. */
  async drain(): Promise<void> {
    while ((this.deleting || this.pendingDeletes.size > 0) && !this.closed)
      await this.flushDeletes();
  }

  /** Stops retrying deletes after one last try (shutdown): the relay covers what is left. */
  async close(timeoutMs = 2_000): Promise<void> {
    await Promise.race([this.drain(), new Promise((r) => setTimeout(r, timeoutMs).unref())]);
    this.closed = true;
  }

  /**
   * One relay pass: reads the outbox a bounded batch at a time, publishes the batch's items
   * older than `minAgeMs` (younger ones belong to a fast path still in progress) and deletes
   * them before it reads the next batch, so a backlog shrinks with every step and nothing
   * known to be out is sent again. Stops at the first batch Kafka does not take. Returns how
   * many messages were published.
   */
  async relayOnce(minAgeMs: number, now = Date.now()): Promise<number> {
    try {
      return await this.relayPass(minAgeMs, now);
    } catch (err) {
      this.m.passes.inc({ result: 'failed' });
      throw err;
    }
  }

  private async relayPass(minAgeMs: number, now: number): Promise<number> {
    const limit = this.o.relayBatch ?? 500;
    let startKey: Record<string, unknown> | undefined;
    let sent = 0;
    let seen = 0;
    let oldest: number | undefined;
    do {
      const page = await this.d.doc.send(
        new ScanCommand({
          TableName: this.d.table,
          ConsistentRead: true,
          Limit: limit,
          ExclusiveStartKey: startKey,
        }),
      );
      const items = (page.Items ?? []).map(envelopeOf);
      seen += items.length;
      for (const it of items) oldest = Math.min(oldest ?? it.createdAtMs, it.createdAtMs);
      const due = items
        .filter((p) => now - p.createdAtMs >= minAgeMs && !this.published.has(p.id))
        .sort((a, b) => a.createdAtMs - b.createdAtMs);
      if (due.length > 0) {
        if (!(await this.publish(due, 'relay'))) {
          this.m.oldest.set(oldest === undefined ? 0 : (Date.now() - oldest) / 1000);
          this.m.passes.inc({ result: 'kafka_unavailable' });
          return sent;
        }
        sent += due.reduce((n, e) => n + e.messages.length, 0);
        // Deleted before the next batch is read: a stalled store slows the relay down
        // instead of letting it re-send what it already published.
        await this.flushDeletes();
      }
      startKey = page.LastEvaluatedKey;
    } while (startKey);
    this.m.backlog.set(seen);
    this.m.oldest.set(oldest === undefined ? 0 : (Date.now() - oldest) / 1000);
    this.m.passes.inc({ result: 'ok' });
    if (sent > 0) this.d.log.info({ sent, pending: seen }, 'outbox relay published pending events');
    return sent;
  }
}

/** Runs `relayOnce` every `intervalMs` until stopped. */
export function startRelay(
  outbox: Outbox,
  o: { intervalMs: number; minAgeMs: number; log: Logger },
) {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> = Promise.resolve();
  let stopped = false;
  let failures = 0;
  const tick = () => {
    running = outbox
      .relayOnce(o.minAgeMs)
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
