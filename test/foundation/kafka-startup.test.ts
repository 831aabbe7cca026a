import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKafka, parseBrokers } from '../../shared/bus/kafka.js';
import { Producer } from '../../shared/bus/producer.js';
import { applyDefinitions, createRuntime } from '../../bin/compose.js';
import type { Runtime } from '../../shared/runtime.js';
import { collectTopic } from '../helpers/kafka.js';
import { testConfig, testLogger } from '../helpers/stack.js';

/**
 * The producer every process builds starts without a warning from kafkajs (its notice about
 * the v2 partitioner, "Limiting retries for the idempotent producer"): what it logs at start-up
 * is what an operator reads, so nothing there may be noise to learn to ignore. kafkajs gives
 * its partitioner notice once per process, so this producer is made before the runtime's.
 */
const lines: { level: number; msg?: string; component?: string }[] = [];
const sink = new Writable({
  write(chunk: Buffer, _enc, done) {
    for (const l of chunk.toString().split('\n').filter(Boolean))
      lines.push(JSON.parse(l) as (typeof lines)[number]);
    done();
  },
});
const log = pino({ level: 'debug' }, sink);
const config = testConfig('kafka-startup');
const producer = new Producer(
  createKafka(config, parseBrokers(config.KAFKA_BROKERS ?? ''), log),
  log,
);
let rt: Runtime;
beforeAll(async () => {
  rt = createRuntime(config, testLogger(config));
  await applyDefinitions(rt);
});
afterAll(async () => {
  await producer.close();
  await rt?.close();
});

describe('the Kafka producer', () => {
  it('connects and sends with no warning from kafkajs, and the message arrives', async () => {
    const topic = rt.topics.consentEvents;
    const seen = await collectTopic(rt.kafka, topic);
    try {
      await producer.connect();
      await producer.send([{ topic, key: 'k', value: '{"startup":true}' }]);
      await expect
        .poll(() => seen.messages.some((m) => JSON.stringify(m.value) === '{"startup":true}'), {
          timeout: 15_000,
        })
        .toBe(true);
    } finally {
      await seen.stop();
    }
    const warnings = lines.filter((l) => l.level >= 40 && l.component === 'kafkajs');
    expect(warnings.map((w) => w.msg)).toEqual([]);
  });
});
