import { CompressionTypes, Partitioners, type Kafka, type Producer as KProducer } from 'kafkajs';
import type { Logger } from '../logger.js';

export interface OutMessage {
  topic: string;
  key: string;
  value: string;
  headers?: Record<string, string>;
}

interface Pending {
  msgs: OutMessage[];
  resolve: () => void;
  reject: (err: unknown) => void;
}

/**
 * Idempotent, acks=all producer with natural batching: while one request is in flight,
 * new sends queue up and leave together in the next request. This keeps one in-flight
 * request per producer (what the idempotent protocol wants) without capping throughput at
 * one message per round trip, and adds no delay when the producer is idle.
 */
export class Producer {
  private producer: KProducer;
  private queue: Pending[] = [];
  private flushing = false;
  private connected?: Promise<void>;
  private closed = false;
  /** False from a failed send until the next successful one. */
  private ok = true;

  constructor(
    private readonly kafka: Kafka,
    private readonly log: Logger,
    private readonly opts: { retries?: number } = {},
  ) {
    this.producer = this.create();
  }

  private create(): KProducer {
    return this.kafka.producer({
      // kafkajs 2's default partitioner (murmur2 of the key, as Java's), named so it is chosen
      // rather than defaulted.
      createPartitioner: Partitioners.DefaultPartitioner,
      // One request in flight keeps a partition's order across retries. Not kafkajs's
      // idempotent mode: that needs unbounded retries, and these are bounded so a request fails
      // (and the outbox relay takes over) instead of hanging while Kafka is down; duplicates
      // from a retried send are removed by consumer idempotency.
      maxInFlightRequests: 1,
      retry: { retries: this.opts.retries ?? 5, initialRetryTime: 100, maxRetryTime: 1000 },
      allowAutoTopicCreation: false,
    });
  }

  /**
   * False while Kafka is failing this producer (from a failed send until the next successful
   * one): callers that have a durable fallback (the outbox relay) skip the wait.
   */
  get healthy(): boolean {
    return this.ok && !this.closed;
  }

  /**
   * A caller gave up waiting for a send (a stalled broker answers nothing, and kafkajs takes
   * its request timeout times its retries to say so): counted as failing until a send succeeds.
   */
  markSlow(): void {
    this.ok = false;
  }

  connect(): Promise<void> {
    this.connected ??= this.producer.connect().catch((err: unknown) => {
      this.connected = undefined;
      throw err;
    });
    return this.connected;
  }

  /**
   * After a failed send the producer is replaced by a new one (new connections, fresh metadata)
   * before the next send, so nothing of a failed request (a timed-out batch that may or may not
   * have been appended, a connection to a broker that stalled) carries over. What the failed
   * send carried is re-sent by its caller or the outbox relay; consumers deduplicate by event id.
   */
  private async replace(err: unknown): Promise<void> {
    const old = this.producer;
    this.producer = this.create();
    this.connected = undefined;
    this.log.warn({ err: describe(err) }, 'kafka producer replaced after a failed send');
    await old.disconnect().catch(() => undefined);
  }

  /** Resolves when every message is acknowledged by all in-sync replicas. */
  send(msgs: OutMessage[]): Promise<void> {
    if (this.closed) return Promise.reject(new Error('producer is closed'));
    if (msgs.length === 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ msgs, resolve, reject });
      void this.flush();
    });
  }

  private async flush(): Promise<void> {
    if (this.flushing) return;
    this.flushing = true;
    try {
      while (this.queue.length > 0) {
        const batch = this.queue;
        this.queue = [];
        const byTopic = new Map<
          string,
          { key: string; value: string; headers?: Record<string, string> }[]
        >();
        for (const p of batch) {
          for (const m of p.msgs) {
            const list = byTopic.get(m.topic) ?? [];
            list.push({ key: m.key, value: m.value, ...(m.headers ? { headers: m.headers } : {}) });
            byTopic.set(m.topic, list);
          }
        }
        try {
          await this.connect();
          await this.producer.sendBatch({
            acks: -1,
            compression: CompressionTypes.None,
            topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })),
          });
          this.ok = true;
          for (const p of batch) p.resolve();
        } catch (err) {
          this.ok = false;
          this.log.warn({ err: describe(err) }, 'kafka send failed');
          for (const p of batch) p.reject(err);
          await this.replace(err);
        }
      }
    } finally {
      this.flushing = false;
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    while (this.flushing || this.queue.length > 0) await new Promise((r) => setTimeout(r, 10));
    await this.producer.disconnect().catch(() => undefined);
  }
}

/** The error with its kafkajs protocol type (e.g. OUT_OF_ORDER_SEQUENCE_NUMBER) for the log. */
function describe(err: unknown): unknown {
  const e = err as { name?: string; message?: string; type?: string; cause?: unknown };
  return {
    name: e?.name,
    message: e?.message,
    type: e?.type,
    cause: e?.cause && describe(e.cause),
  };
}
