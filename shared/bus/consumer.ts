import type { Consumer, Kafka, KafkaMessage } from 'kafkajs';
import { Counter, Gauge, type Registry } from 'prom-client';
import { coerceError, isPermanent } from '../errors.js';
import type { Logger } from '../logger.js';
import { getOrCreate } from '../metrics.js';
import { backoffMs } from '../retry.js';
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
  /** First back-off after a failure, doubling up to `retryMaxMs`; retries never stop. */
  retryBaseMs?: number;
  retryMaxMs?: number;
  partitionsConsumedConcurrently?: number;
  fromBeginning?: boolean;
  sessionTimeoutMs?: number;
}

/**
 * Waits `ms` while `live()` holds, heartbeating every 2 s (a failed heartbeat — the group is
 * rebalancing — is left to `live()` to notice). False when `live()` turned false.
 */
export async function pause(
  ms: number,
  live: () => boolean,
  heartbeat?: () => Promise<void>,
): Promise<boolean> {
  const until = Date.now() + ms;
  let lastBeat = Date.now();
  while (Date.now() < until) {
    if (!live()) return false;
    await new Promise((r) => setTimeout(r, Math.min(250, until - Date.now())));
    if (heartbeat && Date.now() - lastBeat >= 2_000) {
      lastBeat = Date.now();
      await heartbeat().catch(() => undefined);
    }
  }
  return live();
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
    deadLettered: getOrCreate(
      registry,
      'svc_dead_lettered_total',
      () =>
        new Counter({
          name: 'svc_dead_lettered_total',
          help: 'Messages sent to the dead-letter topic (they can never be processed), by group, source topic and code',
          labelNames: ['group', 'topic', 'code'],
          registers: [registry],
        }),
    ),
    admission: getOrCreate(
      registry,
      'svc_consumer_admission_limit',
      () =>
        new Gauge({
          name: 'svc_consumer_admission_limit',
          help: 'Messages a pipelined consumer lets its handler work on at once; it halves on transient failures and grows back by one per success',
          labelNames: ['group'],
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
 * Runs one consumer group over a handler map. Owns decoding, retries, dead-lettering and offset
 * commits: an offset is committed only after its handler succeeded or its message reached the
 * dead-letter topic, so nothing is lost. Only a message that can never be processed
 * (`isPermanent`) is dead-lettered; any other failure holds the partition and is retried with
 * capped back-off for as long as it lasts.
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
    await this.run();
    this.o.log.info(
      { groupId: this.o.groupId, topics: Object.keys(this.o.handlers) },
      'consumer started',
    );
  }

  private async run(): Promise<void> {
    const { kafka, groupId, handlers } = this.o;
    const consumer = kafka.consumer({
      groupId,
      sessionTimeout: this.o.sessionTimeoutMs ?? 30_000,
      heartbeatInterval: 3_000,
      maxWaitTimeInMs: 100,
      allowAutoTopicCreation: false,
    });
    this.consumer = consumer;
    // kafkajs restarts a crashed consumer only after a retriable error; any other crash
    // would leave the group for good, so this runner makes a new consumer instead.
    consumer.on(consumer.events.CRASH, ({ payload }) => {
      if (!payload.restart && !this.stopping) this.restartAfterCrash(consumer, payload.error);
    });
    await consumer.connect();
    await consumer.subscribe({
      topics: Object.keys(handlers),
      fromBeginning: this.o.fromBeginning ?? true,
    });
    await consumer.run({
      partitionsConsumedConcurrently: this.o.partitionsConsumedConcurrently ?? 3,
      eachBatchAutoResolve: false,
      autoCommit: true,
      // kafkajs passes closures, not methods: they need no `this`.
      // eslint-disable-next-line @typescript-eslint/unbound-method
      eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning, isStale }) => {
        const live = () => isRunning() && !isStale() && !this.stopping;
        for (const message of batch.messages) {
          if (!live()) break;
          // Not done (the fault outlived this assignment or the process is stopping): left
          // unresolved, so it is fetched again by whoever owns the partition next.
          if (!(await this.handle(batch.topic, batch.partition, message, live, heartbeat))) break;
          resolveOffset(message.offset);
          await heartbeat().catch(() => undefined);
        }
        this.m.lag.set(
          { group: groupId, topic: batch.topic, partition: String(batch.partition) },
          Number(batch.offsetLagLow()),
        );
      },
    });
  }

  private restartAfterCrash(crashed: Consumer, error: unknown): void {
    this.o.log.error({ err: error }, 'consumer crashed; starting a new one');
    void (async () => {
      for (let attempt = 0; !this.stopping; attempt++) {
        await crashed.disconnect().catch(() => undefined);
        await new Promise((r) =>
          setTimeout(r, backoffMs(attempt, { baseMs: 500, maxMs: 10_000, jitter: 0.2 })),
        );
        if (this.stopping) return;
        try {
          await this.run();
          return;
        } catch (err) {
          this.o.log.warn({ err, attempt }, 'consumer restart failed; trying again');
        }
      }
    })();
  }

  /**
   * Handles one message: true when it is done (handled, or dead-lettered because it can never
   * be processed). Any other failure is retried with capped back-off for as long as it lasts,
   * heartbeating so the group keeps the partition here; false when the partition was lost or
   * the runner is stopping before it succeeded.
   */
  private async handle(
    topic: string,
    partition: number,
    message: KafkaMessage,
    live: () => boolean,
    heartbeat: () => Promise<void>,
  ): Promise<boolean> {
    const { groupId, handlers } = this.o;
    const handler = handlers[topic];
    const headers = headersOf(message);
    const key = message.key?.toString();
    const log = this.o.log.child({ topic, partition, offset: message.offset });
    let event: unknown;
    try {
      event = JSON.parse(message.value?.toString() ?? 'null');
    } catch (err) {
      return this.deadLetter(
        topic,
        partition,
        message,
        'SVC_BAD_JSON',
        (err as Error).message,
        live,
      );
    }
    if (!handler) return true;
    for (let attempt = 0; ; attempt++) {
      try {
        await handler(event, { topic, partition, offset: message.offset, key, headers, log });
        this.m.handled.inc({ group: groupId, topic, outcome: 'ok' });
        return true;
      } catch (raw) {
        const err = coerceError(raw);
        if (isPermanent(raw)) {
          log.error({ err: raw, code: err.code }, 'handler failed permanently; dead-lettering');
          return this.deadLetter(
            topic,
            partition,
            message,
            err.code,
            (raw as Error)?.message ?? String(raw),
            live,
          );
        }
        this.m.handled.inc({ group: groupId, topic, outcome: 'retried' });
        const wait = backoffMs(attempt, {
          baseMs: this.o.retryBaseMs ?? 200,
          maxMs: this.o.retryMaxMs ?? 10_000,
          jitter: 0.2,
        });
        const level = attempt >= 3 ? 'error' : 'warn';
        log[level]({ err: raw, code: err.code, attempt, wait }, 'handler failed; retrying');
        if (!(await pause(wait, live, heartbeat))) return false;
      }
    }
  }

  /** Dead-letters a message, retrying the send while Kafka cannot take it. */
  private async deadLetter(
    topic: string,
    partition: number,
    m: KafkaMessage,
    code: string,
    reason: string,
    live: () => boolean,
  ): Promise<boolean> {
    for (let attempt = 0; ; attempt++) {
      try {
        await deadLetter(this.o, { topic, partition, message: m, code, reason });
        this.m.handled.inc({ group: this.o.groupId, topic, outcome: 'dead_lettered' });
        this.m.deadLettered.inc({ group: this.o.groupId, topic, code });
        return true;
      } catch (err) {
        this.o.log.warn({ err, attempt }, 'dead-letter send failed; retrying');
        if (!(await pause(backoffMs(attempt, { baseMs: 200, maxMs: 10_000, jitter: 0.2 }), live)))
          return false;
      }
    }
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
    retryMaxMs: rt.config.CONSUMER_RETRY_MAX_MS,
    sessionTimeoutMs: rt.config.CONSUMER_SESSION_TIMEOUT_MS,
    ...(o.partitionsConsumedConcurrently
      ? { partitionsConsumedConcurrently: o.partitionsConsumedConcurrently }
      : {}),
  });
}
