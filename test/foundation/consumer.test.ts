import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { serialConsumer } from '../../shared/bus/consumer.js';
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

describe('serial consumer against real Kafka', () => {
  it('retries failures for as long as they last, dead-letters only unprocessable messages, and commits', async () => {
    const seen: string[] = [];
    // More failures than any fixed retry budget would allow: a long fault must not dead-letter.
    const failuresLeft = new Map([
      ['flaky', 8],
      ['unexplained', 3],
    ]);
    const runner = serialConsumer({
      kafka: rt.kafka,
      groupId: `${rt.config.TOPIC_PREFIX}g1`,
      retryBaseMs: 10,
      retryMaxMs: 40,
      handlers: {
        [rt.topics.notifications]: async (event) => {
          const { kind } = event as { kind: string };
          const left = failuresLeft.get(kind) ?? 0;
          if (left > 0) {
            failuresLeft.set(kind, left - 1);
            // An error nobody classified is retried too: it may be a fault we did not foresee.
            if (kind === 'unexplained') throw new Error('socket said something odd');
            throw new AppError('SVC_UNAVAILABLE', 'try later');
          }
          if (kind === 'poison') throw new AppError('SVC_VALIDATION_FAILED', 'not an event');
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
      { topic: rt.topics.notifications, key: 'k', value: JSON.stringify({ kind: 'unexplained' }) },
      { topic: rt.topics.notifications, key: 'k', value: JSON.stringify({ kind: 'poison' }) },
      { topic: rt.topics.notifications, key: 'k', value: '{not json' },
      { topic: rt.topics.notifications, key: 'k', value: JSON.stringify({ kind: 'fine' }) },
    ]);
    await vi.waitFor(() => expect(seen).toEqual(['flaky', 'unexplained', 'fine']), {
      timeout: 15_000,
    });
    await vi.waitFor(
      () => expect(dlq.messages.map((m) => m.headers['x-dlq-code'])).toHaveLength(2),
      { timeout: 15_000 },
    );
    expect(dlq.messages.map((m) => m.headers['x-dlq-code']).sort()).toEqual([
      'SVC_BAD_JSON',
      'SVC_VALIDATION_FAILED',
    ]);
    expect(dlq.messages.every((m) => m.headers['x-dlq-topic'] === rt.topics.notifications)).toBe(
      true,
    );
    const metrics = await rt.registry.getSingleMetricAsString('svc_consumer_messages_total');
    expect(metrics).toMatch(/outcome="retried"[^\n]* 11/);
    const dead = await rt.registry.getSingleMetricAsString('svc_dead_lettered_total');
    expect(dead).toMatch(/code="SVC_VALIDATION_FAILED"[^\n]* 1/);
    expect(dead).toMatch(/code="SVC_BAD_JSON"[^\n]* 1/);
    await runner.stop();
    await runner.stop(); // idempotent

    // A new member of the same group starts after the committed offsets: nothing is redone.
    const again: unknown[] = [];
    const second = serialConsumer({
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
