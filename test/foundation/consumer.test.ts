import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ConsumerRunner } from '../../shared/bus/consumer.js';
import { AppError } from '../../shared/errors.js';
import type { Runtime } from '../../shared/runtime.js';
import { collectTopic } from '../helpers/kafka.js';
import { testRuntime } from '../helpers/stack.js';

let rt: Runtime;
beforeAll(async () => {
  rt = await testRuntime('consumer');
});
afterAll(async () => {
  await rt.close();
});

describe('consumer runner against real Kafka', () => {
  it('retries retriable errors, dead-letters permanent ones and bad JSON, and commits', async () => {
    const seen: string[] = [];
    const failuresLeft = new Map([['flaky', 2]]);
    const runner = new ConsumerRunner({
      kafka: rt.kafka,
      groupId: `${rt.config.TOPIC_PREFIX}g1`,
      retryBaseMs: 10,
      maxRetries: 3,
      handlers: {
        [rt.topics.notifications]: async (event) => {
          const { kind } = event as { kind: string };
          const left = failuresLeft.get(kind) ?? 0;
          if (left > 0) {
            failuresLeft.set(kind, left - 1);
            throw new AppError('SVC_UNAVAILABLE', 'try later');
          }
          if (kind === 'poison') throw new Error('cannot handle this one');
          seen.push(kind);
        },
      },
      deadLetterTopic: rt.topics.deadLetter,
      producer: rt.producer,
      log: rt.log,
      registry: rt.registry,
    });
    const dlq = await collectTopic(rt.kafka, rt.topics.deadLetter);
    await runner.start();
    await rt.producer.send([
      { topic: rt.topics.notifications, key: 'k', value: JSON.stringify({ kind: 'flaky' }) },
      { topic: rt.topics.notifications, key: 'k', value: JSON.stringify({ kind: 'poison' }) },
      { topic: rt.topics.notifications, key: 'k', value: '{not json' },
      { topic: rt.topics.notifications, key: 'k', value: JSON.stringify({ kind: 'fine' }) },
    ]);
    await vi.waitFor(() => expect(seen).toEqual(['flaky', 'fine']), { timeout: 15_000 });
    await vi.waitFor(
      () => expect(dlq.messages.map((m) => m.headers['x-dlq-code'])).toHaveLength(2),
      { timeout: 15_000 },
    );
    expect(dlq.messages.map((m) => m.headers['x-dlq-code']).sort()).toEqual([
      'SVC_BAD_JSON',
      'SVC_INTERNAL',
    ]);
    expect(dlq.messages.every((m) => m.headers['x-dlq-topic'] === rt.topics.notifications)).toBe(
      true,
    );
    const metrics = await rt.registry.getSingleMetricAsString('svc_consumer_messages_total');
    expect(metrics).toMatch(/outcome="retried"[^\n]* 2/);
    await runner.stop();
    await runner.stop(); // idempotent

    // A new member of the same group starts after the committed offsets: nothing is redone.
    const again: unknown[] = [];
    const second = new ConsumerRunner({
      kafka: rt.kafka,
      groupId: `${rt.config.TOPIC_PREFIX}g1`,
      handlers: { [rt.topics.notifications]: async (e) => void again.push(e) },
      deadLetterTopic: rt.topics.deadLetter,
      producer: rt.producer,
      log: rt.log,
      registry: rt.registry,
    });
    await second.start();
    await rt.producer.send([
      { topic: rt.topics.notifications, key: 'k', value: JSON.stringify({ kind: 'after' }) },
    ]);
    await vi.waitFor(() => expect(again).toEqual([{ kind: 'after' }]), { timeout: 15_000 });
    await second.stop();
    await dlq.stop();
  });
});
