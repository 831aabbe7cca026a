import { CompressionTypes, type Kafka, type Producer as KProducer } from 'kafkajs';
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
  private readonly producer: KProducer;
  private queue: Pending[] = [];
  private flushing = false;
  private connected?: Promise<void>;
  private closed = false;

  constructor(
    kafka: Kafka,
    private readonly log: Logger,
    opts: { retries?: number } = {},
  ) {
    this.producer = kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      // Bounded so a request fails (and the outbox relay takes over) instead of hanging while
      // Kafka is down; duplicates from a retried send are removed by consumer idempotency.
      retry: { retries: opts.retries ?? 5, initialRetryTime: 100, maxRetryTime: 1000 },
      allowAutoTopicCreation: false,
    });
  }

  connect(): Promise<void> {
    this.connected ??= this.producer.connect().catch((err: unknown) => {
      this.connected = undefined;
      throw err;
    });
    return this.connected;
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
          for (const p of batch) p.resolve();
        } catch (err) {
          this.log.warn({ err }, 'kafka send failed');
          for (const p of batch) p.reject(err);
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
