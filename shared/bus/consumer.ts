import type { Consumer, Kafka, KafkaMessage } from 'kafkajs';
import { Counter, Gauge, type Registry } from 'prom-client';
import { coerceError } from '../errors.js';
import type { Logger } from '../logger.js';
import { getOrCreate } from '../metrics.js';
import type { Producer } from './producer.js';
import type { Runtime } from '../runtime.js';

export interface HandlerContext {
  topic: string;
  partition: number;
  offset: string;
  key: string | undefined;
  headers: Record<string, string>;
  log: Logger;
}

/** Handlers never see kafkajs: they get the decoded JSON value and a small context. */
export type Handler = (event: unknown, ctx: HandlerContext) => Promise<void>;

export interface ConsumerRunnerOptions {
  kafka: Kafka;
  groupId: string;
  /** Kafka topic name → handler. */
  handlers: Record<string, Handler>;
  /** Where messages go after their retries are exhausted or when they are permanently bad. */
  deadLetterTopic: string;
  producer: Producer;
  log: Logger;
  registry: Registry;
  maxRetries?: number;
  retryBaseMs?: number;
  partitionsConsumedConcurrently?: number;
  fromBeginning?: boolean;
}

export function headersOf(m: KafkaMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(m.headers ?? {})) {
    if (v === undefined) continue;
    out[k] = Array.isArray(v) ? String(v[0]) : String(v);
  }
  return out;
}

export function consumerMetrics(registry: Registry) {
  return {
    handled: getOrCreate(
      registry,
      'svc_consumer_messages_total',
      () =>
        new Counter({
          name: 'svc_consumer_messages_total',
          help: 'Messages handled by consumer group, topic and outcome (ok, retried, dead_lettered)',
          labelNames: ['group', 'topic', 'outcome'],
          registers: [registry],
        }),
    ),
    lag: getOrCreate(
      registry,
      'svc_consumer_lag',
      () =>
        new Gauge({
          name: 'svc_consumer_lag',
          help: 'Messages behind the partition end, as of the last batch',
          labelNames: ['group', 'topic', 'partition'],
          registers: [registry],
        }),
    ),
  };
}

/**
 * Runs one consumer group over a handler map. Owns decoding, retry of retriable errors with
 * backoff, dead-lettering and offset commits: an offset is committed only after its handler
 * succeeded or its message reached the dead-letter topic, so nothing is lost.
 */
export class ConsumerRunner {
  private consumer: Consumer | undefined;
  private stopping = false;
  private stopped?: Promise<void>;
  private readonly m;

  constructor(private readonly o: ConsumerRunnerOptions) {
    this.m = consumerMetrics(o.registry);
  }

  async start(): Promise<void> {
    const { kafka, groupId, handlers, log } = this.o;
    const consumer = kafka.consumer({
      groupId,
      sessionTimeout: 30_000,
      heartbeatInterval: 3_000,
      maxWaitTimeInMs: 100,
      allowAutoTopicCreation: false,
    });
    this.consumer = consumer;
    await consumer.connect();
    await consumer.subscribe({
      topics: Object.keys(handlers),
      fromBeginning: this.o.fromBeginning ?? true,
    });
    await consumer.run({
      partitionsConsumedConcurrently: this.o.partitionsConsumedConcurrently ?? 3,
      eachBatchAutoResolve: false,
      autoCommit: true,
      eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning, isStale }) => {
        for (const message of batch.messages) {
          if (!isRunning() || isStale() || this.stopping) break;
          await this.handle(batch.topic, batch.partition, message);
          resolveOffset(message.offset);
          await heartbeat();
        }
        this.m.lag.set(
          { group: groupId, topic: batch.topic, partition: String(batch.partition) },
          Number(batch.offsetLagLow()),
        );
      },
    });
    log.info({ groupId, topics: Object.keys(handlers) }, 'consumer started');
  }

  private async handle(topic: string, partition: number, message: KafkaMessage): Promise<void> {
    const { groupId, handlers } = this.o;
    const handler = handlers[topic];
    const headers = headersOf(message);
    const key = message.key?.toString();
    const log = this.o.log.child({ topic, partition, offset: message.offset });
    let event: unknown;
    try {
      event = JSON.parse(message.value?.toString() ?? 'null');
    } catch (err) {
      await this.deadLetter(topic, partition, message, 'SVC_BAD_JSON', (err as Error).message);
      return;
    }
    if (!handler) return;
    const maxRetries = this.o.maxRetries ?? 5;
    for (let attempt = 0; ; attempt++) {
      try {
        await handler(event, { topic, partition, offset: message.offset, key, headers, log });
        this.m.handled.inc({ group: groupId, topic, outcome: 'ok' });
        return;
      } catch (raw) {
        const err = coerceError(raw);
        if (err.retriable && attempt < maxRetries && !this.stopping) {
          this.m.handled.inc({ group: groupId, topic, outcome: 'retried' });
          const wait = Math.min((this.o.retryBaseMs ?? 200) * 2 ** attempt, 10_000);
          log.warn({ err: raw, attempt, wait }, 'handler failed; retrying');
          await new Promise((r) => setTimeout(r, wait));
          continue;
        }
        if (err.retriable && this.stopping) throw raw; // leave uncommitted; the next owner retries
        log.error({ err: raw, code: err.code }, 'handler failed; dead-lettering');
        await this.deadLetter(
          topic,
          partition,
          message,
          err.code,
          (raw as Error)?.message ?? String(raw),
        );
        return;
      }
    }
  }

  private async deadLetter(
    topic: string,
    partition: number,
    m: KafkaMessage,
    code: string,
    reason: string,
  ) {
    await deadLetter(this.o, { topic, partition, message: m, code, reason });
    this.m.handled.inc({ group: this.o.groupId, topic, outcome: 'dead_lettered' });
  }

  /** Lets the in-flight message finish, commits, leaves the group. Idempotent. */
  stop(): Promise<void> {
    this.stopping = true;
    this.stopped ??= (async () => {
      await this.consumer
        ?.disconnect()
        .catch((err: unknown) => this.o.log.warn({ err }, 'consumer disconnect failed'));
    })();
    return this.stopped;
  }
}

/** Sends a message, with where it came from and why, to the dead-letter topic. */
export async function deadLetter(
  o: { producer: Producer; deadLetterTopic: string; groupId: string },
  d: { topic: string; partition: number; message: KafkaMessage; code: string; reason: string },
): Promise<void> {
  const m = d.message;
  await o.producer.send([
    {
      topic: o.deadLetterTopic,
      key: m.key?.toString() ?? '',
      value: m.value?.toString() ?? '',
      headers: {
        ...headersOf(m),
        'x-dlq-group': o.groupId,
        'x-dlq-topic': d.topic,
        'x-dlq-partition': String(d.partition),
        'x-dlq-offset': m.offset,
        'x-dlq-code': d.code,
        'x-dlq-reason': d.reason.slice(0, 500),
      },
    },
  ]);
}

/**
 * A runner wired to a process's runtime: its Kafka client, producer, dead-letter topic,
 * registry and retry budget; the group is `${TOPIC_PREFIX}${name}`.
 */
export function runtimeConsumer(
  rt: Runtime,
  o: {
    name: string;
    handlers: Record<string, Handler>;
    log: Logger;
    partitionsConsumedConcurrently?: number;
  },
): ConsumerRunner {
  return new ConsumerRunner({
    kafka: rt.kafka,
    groupId: `${rt.config.TOPIC_PREFIX}${o.name}`,
    handlers: o.handlers,
    deadLetterTopic: rt.topics.deadLetter,
    producer: rt.producer,
    log: o.log,
    registry: rt.registry,
    maxRetries: rt.config.CONSUMER_MAX_RETRIES,
    ...(o.partitionsConsumedConcurrently
      ? { partitionsConsumedConcurrently: o.partitionsConsumedConcurrently }
      : {}),
  });
}
