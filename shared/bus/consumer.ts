import type { Kafka } from 'kafkajs';
import type { Registry } from 'prom-client';
import type { Logger } from '../logger.js';
import { PipelinedConsumer } from './pipeline.js';
import type { BusDeps } from './support.js';
import type { Producer } from './producer.js';

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

export interface SerialConsumerOptions {
  kafka: Kafka;
  groupId: string;
  /** Kafka topic name → handler. */
  handlers: Record<string, Handler>;
  /** Where messages go when they can never be processed. */
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
  fetchMaxWaitMs?: number;
}

/**
 * A consumer group over a handler map, one message at a time per partition, in order: the
 * pipelined consumer in its serial mode, so both kinds share decoding, retries,
 * dead-lettering, admission and offset commits. An offset is committed only after its handler
 * succeeded or its message reached the dead-letter topic, so nothing is lost. Only a message
 * that can never be processed (`isPermanent`) is dead-lettered; any other failure holds the
 * partition and is retried with capped back-off for as long as it lasts.
 */
export function serialConsumer(o: SerialConsumerOptions): PipelinedConsumer {
  const { handlers, ...rest } = o;
  return new PipelinedConsumer({
    ...rest,
    topics: Object.keys(handlers),
    serial: true,
    // One message per partition is in flight; the bound only matters for `uncertain`, which
    // handlers of a handler map do not see.
    maxUncommitted: 1_000,
    handler: async (messages) =>
      messages.map((m) => {
        const handler = handlers[m.topic];
        if (!handler) return Promise.resolve();
        const { topic, partition, offset, key, headers } = m;
        return handler(m.value, {
          topic,
          partition,
          offset,
          key,
          headers,
          log: o.log.child({ topic, partition, offset }),
        });
      }),
  });
}

/**
 * A serial consumer wired to a process's runtime: its Kafka client, producer, dead-letter
 * topic, registry and retry budget; the group is `${TOPIC_PREFIX}${name}`.
 */
export function runtimeConsumer(
  rt: BusDeps,
  o: {
    name: string;
    handlers: Record<string, Handler>;
    log: Logger;
    partitionsConsumedConcurrently?: number;
  },
): PipelinedConsumer {
  return serialConsumer({
    kafka: rt.kafka,
    groupId: `${rt.config.TOPIC_PREFIX}${o.name}`,
    handlers: o.handlers,
    deadLetterTopic: rt.topics.deadLetter,
    producer: rt.producer,
    log: o.log,
    registry: rt.registry,
    sessionTimeoutMs: rt.config.CONSUMER_SESSION_TIMEOUT_MS,
    ...(o.partitionsConsumedConcurrently
      ? { partitionsConsumedConcurrently: o.partitionsConsumedConcurrently }
      : {}),
  });
}
