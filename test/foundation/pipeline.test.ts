import type { Consumer, Kafka } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { PipelinedConsumer, type PipelineMessage } from '../../shared/bus/pipeline.js';
import { AppError } from '../../shared/errors.js';
import type { Runtime } from '../../shared/runtime.js';
import { collectTopic } from '../helpers/kafka.js';
import { testRuntime } from '../helpers/stack.js';

/**
 * The dispatcher's consumer against real Kafka: messages are handed over without waiting for
 * their work, and an offset is committed only once every message before it is done.
 */
let rt: Runtime;
beforeAll(async () => {
  rt = await testRuntime('pipeline');
});
afterAll(async () => {
  await rt.close();
});

interface Controlled {
  m: PipelineMessage;
  resolve: () => void;
  reject: (e: unknown) => void;
}

/**
 * A consumer whose messages finish when the test says so. The tests share one topic: each
 * sends kinds with its own prefix, and other tests' messages are done at once.
 */
function controlledConsumer(
  groupId: string,
  prefix: string,
  o: { maxUncommitted?: number; onConsumer?: (c: Consumer) => void; fetchMaxWaitMs?: number } = {},
) {
  const taken: Controlled[] = [];
  const consumer = new PipelinedConsumer({
    kafka: o.onConsumer ? watched(o.onConsumer) : rt.kafka,
    groupId,
    topics: [rt.topics.notifications],
    handler: async (messages) =>
      messages.map((m) =>
        String((m.value as { kind: string }).kind).startsWith(prefix)
          ? new Promise<void>((resolve, reject) => taken.push({ m, resolve, reject }))
          : Promise.resolve(),
      ),
    deadLetterTopic: rt.topics.deadLetter,
    producer: rt.producer,
    log: rt.log,
    registry: rt.registry,
    maxUncommitted: o.maxUncommitted ?? 1000,
    ...(o.fetchMaxWaitMs ? { fetchMaxWaitMs: o.fetchMaxWaitMs } : {}),
    commitIntervalMs: 50,
    retryBaseMs: 10,
    retryMaxMs: 40,
  });
  return { consumer, taken };
}

/**
 * The real Kafka client, handing each consumer it creates to `onConsumer` first, so a test can
 * listen to the kafkajs consumer's instrumentation events (fetches, batches, heartbeats).
 */
function watched(onConsumer: (c: Consumer) => void): Kafka {
  return new Proxy(rt.kafka, {
    get(target, prop, receiver) {
      if (prop !== 'consumer') return Reflect.get(target, prop, receiver) as unknown;
      return (...args: Parameters<Kafka['consumer']>) => {
        const c = target.consumer(...args);
        onConsumer(c);
        return c;
      };
    },
  });
}

async function committed(groupId: string, partition: number): Promise<number> {
  const admin = rt.kafka.admin();
  await admin.connect();
  try {
    const [t] = await admin.fetchOffsets({ groupId, topics: [rt.topics.notifications] });
    const p = t!.partitions.find((x) => x.partition === partition);
    return Number(p?.offset ?? -1);
  } finally {
    await admin.disconnect();
  }
}

const send = (kinds: string[]) =>
  rt.producer.send(
    kinds.map((kind) => ({
      topic: rt.topics.notifications,
      key: 'one-key', // one partition: order matters
      value: JSON.stringify({ kind }),
    })),
  );
const kindOf = (c: Controlled) => (c.m.value as { kind: string }).kind;

describe('pipelined consumer against real Kafka', () => {
  it('hands later messages over while an earlier one is unfinished, and commits only the done prefix', async () => {
    const groupId = `${rt.config.TOPIC_PREFIX}p1`;
    const { consumer, taken } = controlledConsumer(groupId, 'p1-');
    await consumer.start();
    try {
      await send(['p1-a', 'p1-b', 'p1-c']);
      await vi.waitFor(() => expect(taken).toHaveLength(3), { timeout: 15_000 });
      expect(taken.map(kindOf)).toEqual(['p1-a', 'p1-b', 'p1-c']);
      const base = Number(taken[0]!.m.offset);
      const part = taken[0]!.m.partition;

      // b and c are done, a is not: nothing can be committed past a. Once their outcomes are
      // settled (a turn of the event loop), a commit pass runs and is awaited.
      taken[1]!.resolve();
      taken[2]!.resolve();
      await new Promise((r) => setImmediate(r));
      await consumer.commit();
      expect(await committed(groupId, part)).toBeLessThanOrEqual(base);

      taken[0]!.resolve();
      await vi.waitFor(async () => expect(await committed(groupId, part)).toBe(base + 3), {
        timeout: 10_000,
      });
    } finally {
      await consumer.stop();
    }
  });

  it('gives unfinished messages to the next consumer, flagged uncertain', async () => {
    const groupId = `${rt.config.TOPIC_PREFIX}p2`;
    const first = controlledConsumer(groupId, 'p2-');
    await first.consumer.start();
    await send(['p2-x', 'p2-y']);
    await vi.waitFor(() => expect(first.taken).toHaveLength(2), { timeout: 15_000 });
    first.taken[0]!.resolve(); // x done; y never finishes here
    await vi.waitFor(
      async () =>
        expect(await committed(groupId, first.taken[0]!.m.partition)).toBe(
          Number(first.taken[0]!.m.offset) + 1,
        ),
      { timeout: 10_000 },
    );
    await first.consumer.stop();

    const second = controlledConsumer(groupId, 'p2-');
    await second.consumer.start();
    try {
      await vi.waitFor(() => expect(second.taken).toHaveLength(1), { timeout: 20_000 });
      expect(kindOf(second.taken[0]!)).toBe('p2-y');
      expect(second.taken[0]!.m.uncertain).toBe(true);
      second.taken[0]!.resolve();
      // A message appended after the assignment cannot have been handled by anyone else.
      await send(['p2-z']);
      await vi.waitFor(() => expect(second.taken).toHaveLength(2), { timeout: 15_000 });
      expect(kindOf(second.taken[1]!)).toBe('p2-z');
      expect(second.taken[1]!.m.uncertain).toBe(false);
      expect(second.consumer.ctx.held(second.taken[1]!.m)).toBe(true);
      second.taken[1]!.resolve();
    } finally {
      await second.consumer.stop();
    }
  });

  it('retries any failure (as uncertain) until it succeeds and dead-letters only an unprocessable one', async () => {
    const groupId = `${rt.config.TOPIC_PREFIX}p3`;
    const dead = await collectTopic(rt.kafka, rt.topics.deadLetter);
    const { consumer, taken } = controlledConsumer(groupId, 'p3-');
    await consumer.start();
    try {
      await send(['p3-flaky', 'p3-poison']);
      await vi.waitFor(() => expect(taken).toHaveLength(2), { timeout: 15_000 });
      const base = Number(taken[0]!.m.offset);
      taken[0]!.reject(new AppError('SVC_UNAVAILABLE', 'try later'));
      taken[1]!.reject(new AppError('SVC_VALIDATION_FAILED', 'cannot handle this one'));
      // The retry is handed over again, now flagged uncertain (the failed try may have left work
      // behind); it fails on, with transient and unexplained errors, past any fixed budget.
      for (let n = 3; n <= 9; n++) {
        await vi.waitFor(() => expect(taken).toHaveLength(n), { timeout: 10_000 });
        expect(kindOf(taken[n - 1]!)).toBe('p3-flaky');
        expect(taken[n - 1]!.m.uncertain).toBe(true);
        if (n < 9) taken[n - 1]!.reject(n % 2 ? new Error('odd') : new AppError('SVC_UNAVAILABLE'));
      }
      taken[8]!.resolve();
      await vi.waitFor(
        () =>
          expect(dead.messages.map((m) => m.headers['x-dlq-offset'])).toContain(String(base + 1)),
        { timeout: 10_000 },
      );
      await vi.waitFor(
        async () => expect(await committed(groupId, taken[0]!.m.partition)).toBe(base + 2),
        {
          timeout: 10_000,
        },
      );
    } finally {
      await consumer.stop();
      await dead.stop();
    }
  });

  it('works on fewer messages at once while they fail, and on more again as they succeed', async () => {
    const groupId = `${rt.config.TOPIC_PREFIX}p5`;
    const { consumer, taken } = controlledConsumer(groupId, 'p5-');
    const limit = async () => {
      const m = await rt.registry.getSingleMetric('svc_consumer_admission_limit')!.get();
      return m.values.find((v) => v.labels.group === groupId)?.value;
    };
    const settled = new Set<Controlled>();
    const settle = (c: Controlled, e?: unknown) => {
      settled.add(c);
      if (e) c.reject(e);
      else c.resolve();
    };
    const pending = () => taken.filter((c) => !settled.has(c));
    const down = () => new AppError('SVC_UNAVAILABLE', 'store overloaded');
    await consumer.start();
    try {
      await send(Array.from({ length: 40 }, (_, i) => `p5-${i}`));
      // Healthy: all 40 are handed over at once.
      await vi.waitFor(() => expect(taken).toHaveLength(40), { timeout: 15_000 });
      const base = Number(taken[0]!.m.offset);
      // They all fail together: one wave, one cut, to half of the 40 in flight. The retries
      // wait for the 20 slots instead of all coming back on their own clocks.
      for (const c of pending()) settle(c, down());
      await vi.waitFor(() => expect(pending()).toHaveLength(20), { timeout: 10_000 });
      expect(await limit()).toBe(20);
      expect(taken).toHaveLength(60);
      // The retries fail too: half again.
      for (const c of pending()) settle(c, down());
      await vi.waitFor(() => expect(pending()).toHaveLength(10), { timeout: 10_000 });
      expect(await limit()).toBe(10);
      expect(taken).toHaveLength(70);
      // The store is back: every success gives one slot back, and all 40 get done.
      await vi.waitFor(
        async () => {
          for (const c of pending()) settle(c);
          expect(await committed(groupId, taken[0]!.m.partition)).toBe(base + 40);
        },
        { timeout: 15_000 },
      );
      // 70 tries so far, 10 of them pending; the other 30 messages each take one more try.
      expect(taken).toHaveLength(100);
      // 40 successes on top of the 10.
      expect(await limit()).toBe(50);
    } finally {
      await consumer.stop();
    }
  });

  it('stops taking messages past maxUncommitted until a commit makes room', async () => {
    const groupId = `${rt.config.TOPIC_PREFIX}p4`;
    // The kafkajs consumer's own events: which offsets reached the batch handler, and the
    // heartbeats sent since.
    const batches: { topic: string; partition: number; lastOffset: number; beats: number }[] = [];
    let beats = 0;
    const { consumer, taken } = controlledConsumer(groupId, 'p4-', {
      maxUncommitted: 2,
      onConsumer: (c) => {
        c.on(c.events.HEARTBEAT, () => beats++);
        c.on(c.events.START_BATCH_PROCESS, ({ payload: b }) =>
          batches.push({ ...b, lastOffset: Number(b.lastOffset), beats }),
        );
      },
    });
    await consumer.start();
    try {
      await send(['p4-1', 'p4-2', 'p4-3', 'p4-4']);
      await vi.waitFor(() => expect(taken).toHaveLength(2), { timeout: 15_000 });
      const base = Number(taken[0]!.m.offset);
      const part = taken[0]!.m.partition;
      // A negative: nothing more is handed over while the two are unfinished. First, p4-3 and
      // p4-4 reached the batch handler: the partition's loop holds them, waiting for room.
      const held = await vi.waitFor(
        () => {
          const b = batches.find(
            (x) =>
              x.topic === rt.topics.notifications &&
              x.partition === part &&
              x.lastOffset >= base + 3,
          );
          expect(b).toBeDefined();
          return b!;
        },
        { timeout: 15_000 },
      );
      // Then the loop had its chances to hand them over: kafkajs fetches nothing while a batch
      // is being handled, so the heartbeats now come from the loop's wait for room (it beats
      // after each wait of at most 1 s; kafkajs sends one every 3 s). Two beats after the batch
      // arrived mean the loop checked for room, found none and waited again, at least once.
      await vi.waitFor(() => expect(beats).toBeGreaterThanOrEqual(held.beats + 2), {
        timeout: 15_000,
      });
      expect(taken).toHaveLength(2);
      taken[0]!.resolve();
      taken[1]!.resolve();
      await vi.waitFor(() => expect(taken).toHaveLength(4), { timeout: 10_000 });
      expect(taken.map(kindOf)).toEqual(['p4-1', 'p4-2', 'p4-3', 'p4-4']);
      taken[2]!.resolve();
      taken[3]!.resolve();
    } finally {
      await consumer.stop();
    }
  });

  it('holds an idle fetch up to fetchMaxWaitMs, answers it as soon as a message arrives, and counts each fetch', async () => {
    const groupId = `${rt.config.TOPIC_PREFIX}p6`;
    let fetches = 0;
    const { consumer, taken } = controlledConsumer(groupId, 'p6-', {
      fetchMaxWaitMs: 2_000,
      onConsumer: (c) => c.on(c.events.FETCH, () => fetches++),
    });
    const counted = async () => {
      const m = await rt.registry.getSingleMetric('svc_consumer_fetches_total')!.get();
      return m.values.find((v) => v.labels.group === groupId)?.value ?? 0;
    };
    await consumer.start();
    try {
      // Idle for 6 s after its first fetch: about one fetch each 2 s, not one each 100 ms.
      await vi.waitFor(() => expect(fetches).toBeGreaterThan(0), { timeout: 15_000 });
      const from = fetches;
      await new Promise((r) => setTimeout(r, 6_000));
      expect(fetches - from).toBeGreaterThanOrEqual(2);
      expect(fetches - from).toBeLessThanOrEqual(4);
      // A message sent during a held fetch is handed over long before the hold would end.
      await new Promise((r) => setTimeout(r, 300)); // inside a fetch held for 2 s
      const sentAt = Date.now();
      await send(['p6-a']);
      await vi.waitFor(() => expect(taken).toHaveLength(1), { timeout: 10_000 });
      expect(Date.now() - sentAt).toBeLessThan(1_500);
      taken[0]!.resolve();
      expect(await counted()).toBe(fetches);
    } finally {
      await consumer.stop();
    }
  });
});
