import {
  BatchWriteCommand,
  ScanCommand,
  TransactWriteCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import type { TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { Gauge, Counter, type Registry } from 'prom-client';
import type { Logger } from '../logger.js';
import { getOrCreate } from '../metrics.js';
import type { OutMessage, Producer } from '../bus/producer.js';
import { withTraceHeaders } from '../telemetry.js';

export type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

export interface OutboxItem extends OutMessage {
  /** The event id; the outbox item's key. */
  id: string;
  createdAtMs: number;
}

export interface OutboxDeps {
  doc: DynamoDBDocumentClient;
  table: string;
  producer: Producer;
  log: Logger;
  registry: Registry;
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
          help: 'Outbox items waiting to be published, as of the last relay sweep',
          registers: [registry],
        }),
    ),
  };
}

/**
 * Transactional outbox. `commit` writes a change and its events in one TransactWriteItems,
 * then publishes the events at once (fast path) and deletes their outbox items. If Kafka
 * cannot take them, the items stay and the relay (`relayOnce`) publishes them later. Delivery
 * is at-least-once: consumers deduplicate by event id (see idempotency.ts).
 */
export class Outbox {
  private readonly m;
  private pendingDeletes: string[] = [];
  private deleting: Promise<void> | undefined;

  constructor(private readonly d: OutboxDeps) {
    this.m = outboxMetrics(d.registry);
  }

  /** The outbox Put to include in a transaction. */
  item(msg: OutboxItem): TransactItem {
    return {
      Put: {
        TableName: this.d.table,
        Item: {
          id: msg.id,
          topic: msg.topic,
          key: msg.key,
          value: msg.value,
          headers: msg.headers ?? {},
          createdAtMs: msg.createdAtMs,
          // Never expire before the relay had days to publish it; TTL is a last-resort cap.
          expiresAt: Math.floor(msg.createdAtMs / 1000) + 14 * 86400,
        },
        ConditionExpression: 'attribute_not_exists(id)',
      },
    };
  }

  /**
   * Writes `changes` plus one outbox item per message atomically, then publishes. Resolves
   * once the transaction committed, whether or not the fast path published: a failed
   * publish is the relay's work, not the caller's error.
   */
  async commit(changes: TransactItem[], messages: OutboxItem[]): Promise<{ published: boolean }> {
    // The active trace (the HTTP request's) travels with each event, through the relay too.
    messages = messages.map((m) => ({ ...m, headers: withTraceHeaders(m.headers) }));
    const items = [...changes, ...messages.map((m) => this.item(m))];
    if (items.length > 100)
      throw new Error(`transaction has ${items.length} items; DynamoDB allows 100`);
    await this.d.doc.send(new TransactWriteCommand({ TransactItems: items }));
    return { published: await this.publish(messages, 'fast') };
  }

  /** Publishes and deletes outbox items; false (items kept) when Kafka could not take them. */
  async publish(messages: OutboxItem[], path: 'fast' | 'relay'): Promise<boolean> {
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
    for (const m of messages) this.pendingDeletes.push(m.id);
    void this.flushDeletes();
    return true;
  }

  /** Deletes published items, 25 per BatchWriteItem, while any are queued. */
  private flushDeletes(): Promise<void> {
    this.deleting ??= (async () => {
      try {
        while (this.pendingDeletes.length > 0) {
          const ids = this.pendingDeletes.splice(0, 25);
          try {
            const r = await this.d.doc.send(
              new BatchWriteCommand({
                RequestItems: {
                  [this.d.table]: ids.map((id) => ({ DeleteRequest: { Key: { id } } })),
                },
              }),
            );
            const left = r.UnprocessedItems?.[this.d.table] ?? [];
            // Throttled deletes go round again; the relay covers any that never succeed.
            for (const it of left) {
              const id = it.DeleteRequest?.Key?.id;
              if (typeof id === 'string') this.pendingDeletes.push(id);
            }
          } catch (err) {
            this.d.log.warn({ err, count: ids.length }, 'outbox delete failed');
          }
        }
      } finally {
        this.deleting = undefined;
      }
    })();
    return this.deleting;
  }

  /** Waits for queued deletes (shutdown, tests). */
  async drain(): Promise<void> {
    while (this.deleting || this.pendingDeletes.length > 0) await this.flushDeletes();
  }

  /**
   * One relay sweep: reads every pending item older than `minAgeMs` (younger ones belong to
   * a fast path still in progress), oldest first, and publishes them. Returns how many were
   * published. The outbox only holds unpublished items, so a scan stays small.
   */
  async relayOnce(minAgeMs: number, now = Date.now()): Promise<number> {
    const pending: OutboxItem[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await this.d.doc.send(
        new ScanCommand({
          TableName: this.d.table,
          ConsistentRead: true,
          ExclusiveStartKey: startKey,
        }),
      );
      for (const it of page.Items ?? []) pending.push(it as OutboxItem);
      startKey = page.LastEvaluatedKey;
    } while (startKey);
    this.m.backlog.set(pending.length);
    const due = pending
      .filter((p) => now - p.createdAtMs >= minAgeMs)
      .sort((a, b) => a.createdAtMs - b.createdAtMs);
    let sent = 0;
    for (let i = 0; i < due.length; i += 100) {
      const chunk = due.slice(i, i + 100);
      if (!(await this.publish(chunk, 'relay'))) break;
      sent += chunk.length;
    }
    if (sent > 0)
      this.d.log.info({ sent, pending: pending.length }, 'outbox relay published pending events');
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
  const tick = () => {
    running = outbox
      .relayOnce(o.minAgeMs)
      .catch((err: unknown) => o.log.warn({ err }, 'outbox relay sweep failed'))
      .finally(() => {
        if (!stopped) timer = setTimeout(tick, o.intervalMs);
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
