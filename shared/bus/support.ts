import type { Kafka, KafkaMessage } from 'kafkajs';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { BaseConfig } from '../config.js';
import { getOrCreate } from '../metrics.js';
import type { Producer } from './producer.js';

/** What a consumer takes of its process: the clients, the registry and the names it derives. */
export interface BusDeps {
  kafka: Kafka;
  producer: Producer;
  registry: Registry;
  config: Pick<BaseConfig, 'TOPIC_PREFIX' | 'CONSUMER_SESSION_TIMEOUT_MS'>;
  topics: { deadLetter: string };
}

/** What the consumer (`pipeline.ts`) and the dead-letter tools share. */

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
    fetches: getOrCreate(
      registry,
      'svc_consumer_fetches_total',
      () =>
        new Counter({
          name: 'svc_consumer_fetches_total',
          help: 'Fetch requests a consumer group sent to Kafka (each answered as soon as a message is there, or after its longest wait)',
          labelNames: ['group'],
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
