import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ulid } from 'ulid';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ensureFamily, timerKey, type TimerEntry } from '../../shared/storage/timers/due.js';
import { slaCheckEntry, slaCheckMessage } from '../../shared/storage/ledger/flag-entries.js';
import { applyDefinitions, createRuntime } from '../../bin/compose.js';
import type { Runtime } from '../../shared/runtime.js';
import { createTimersWorker } from '../../workers/timers/index.js';
import { FamilySweeper } from '../../workers/timers/sweep.js';
import { collectTopic } from '../helpers/kafka.js';
import { testConfig, testLogger, testRuntime } from '../helpers/stack.js';

/** Several copies of the timers worker on one due-index, and the lease that keeps them apart. */

const fired = async (rt: Runtime) =>
  (await rt.registry.getSingleMetric('svc_timers_fired_total')!.get()).values
    .filter((v) => v.labels.kind === 'sla' && v.labels.outcome === 'done')
    .reduce((n, v) => n + v.value, 0);

async function exists(rt: Runtime, k: { pk: string; sk: string }) {
  const r = await rt.dynamo.doc.send(
    new GetCommand({
      TableName: rt.tables.timers,
      Key: { pk: k.pk, sk: k.sk },
      ConsistentRead: true,
    }),
  );
  return r.Item;
}

describe('two timers worker copies', () => {
  const config = testConfig('timers-copies', {
    TIMER_SHARDS: '4',
    TIMER_SWEEP_INTERVAL_MS: '50',
    EXPIRY_SWEEP_INTERVAL_MS: '50',
    DUTY_SWEEP_INTERVAL_MS: '50',
  });
  const copies: Runtime[] = [];
  const stops: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    for (let i = 0; i < 2; i++) copies.push(createRuntime(config, testLogger(config)));
    await applyDefinitions(copies[0]!);
    for (const rt of copies) stops.push((await createTimersWorker().start(rt)).stop);
  });
  afterAll(async () => {
    for (const stop of stops) await stop();
    for (const rt of copies) await rt.close();
  });

  it('fire each due SLA check exactly once between them', async () => {
    const rt = copies[0]!;
    const topic = await collectTopic(rt.kafka, rt.topics.postbacks);
    try {
      await ensureFamily(rt, 'sla', 4);
      const now = Date.now();
      const entries = Array.from({ length: 40 }, (_, i) =>
        slaCheckEntry(`dsp_${ulid(now)}`, 'app_copies', now + (i % 5) * 10, 4),
      );
      const later = slaCheckEntry(`dsp_${ulid(now)}`, 'app_copies', now + 3_600_000, 4);
      for (const e of [...entries, later])
        await rt.dynamo.doc.send(new PutCommand({ TableName: rt.tables.timers, Item: { ...e } }));

      await vi.waitFor(
        async () => {
          for (const e of entries) expect(await exists(rt, e)).toBeUndefined();
          expect((await fired(copies[0]!)) + (await fired(copies[1]!))).toBeGreaterThanOrEqual(40);
        },
        { timeout: 20_000, interval: 100 },
      );
      expect((await fired(copies[0]!)) + (await fired(copies[1]!))).toBe(40);
      await vi.waitFor(() => expect(topic.messages.length).toBeGreaterThanOrEqual(40), {
        timeout: 10_000,
      });
      const checks = topic.messages.map((m) => slaCheckMessage.parse(m.value));
      expect(new Set(checks.map((c) => c.dispatchId))).toEqual(
        new Set(entries.map((e) => e.dispatchId)),
      );
      expect(checks).toHaveLength(40);
      for (const m of topic.messages) {
        const c = slaCheckMessage.parse(m.value);
        expect(m.key).toBe(c.dispatchId);
        expect(c.at).toBe(entries.find((e) => e.dispatchId === c.dispatchId)!.dueAt);
      }
      // What is not due yet is not touched.
      expect(await exists(rt, later)).toMatchObject({ dispatchId: later.dispatchId });
    } finally {
      await topic.stop();
    }
  });
});

describe('the lease on a fired entry', () => {
  let rt: Runtime;
  let nowMs = Date.now();
  beforeAll(async () => {
    rt = await testRuntime('timers-lease', { TIMER_SHARDS: '2' });
  });
  afterAll(async () => {
    await rt?.close();
  });

  function sweeper(act: (e: TimerEntry) => Promise<void>) {
    return new FamilySweeper(rt, {
      family: 'expiry',
      shards: 2,
      intervalMs: 60_000,
      leaseMs: 30_000,
      now: () => nowMs,
      log: rt.log,
      act,
    });
  }

  const entry = (id: string): TimerEntry => ({
    ...timerKey('expiry', id, nowMs - 1000, 2),
    kind: 'test',
  });

  it('leaves an entry leased by a copy that died until the lease runs out', async () => {
    const seen: string[] = [];
    const s = sweeper(async (e) => void seen.push(e.sk));
    await s.init(); // sweeps are driven by hand
    const e = entry(`dead-${ulid()}`);
    await rt.dynamo.doc.send(
      new PutCommand({
        TableName: rt.tables.timers,
        Item: { ...e, leaseUntil: nowMs + 30_000, leaseToken: 'a copy that died' },
      }),
    );
    expect((await s.sweep()).taken).toBe(1);
    expect(seen).toEqual([]);
    nowMs += 31_000;
    const stats = await s.sweep();
    expect(stats.done).toEqual({ test: 1 });
    expect(seen).toEqual([e.sk]);
    expect(await exists(rt, e)).toBeUndefined();
  });

  it('gives the lease back when the action fails, so the next sweep retries it', async () => {
    let calls = 0;
    const s = sweeper(async () => {
      if (++calls === 1) throw new Error('Kafka is down');
    });
    await s.init();
    const e = entry(`flaky-${ulid()}`);
    await rt.dynamo.doc.send(new PutCommand({ TableName: rt.tables.timers, Item: { ...e } }));
    expect((await s.sweep()).failed).toEqual({ test: 1 });
    const kept = await exists(rt, e);
    expect(kept).toBeDefined();
    expect(kept).not.toHaveProperty('leaseUntil');
    expect((await s.sweep()).done).toEqual({ test: 1 });
    expect(calls).toBe(2);
    expect(await exists(rt, e)).toBeUndefined();
  });

  it('lets only one of two copies hold an entry at a time', async () => {
    const e = entry(`race-${ulid()}`);
    await rt.dynamo.doc.send(new PutCommand({ TableName: rt.tables.timers, Item: { ...e } }));
    let running = 0;
    let overlap = false;
    const act = async () => {
      if (++running > 1) overlap = true;
      // Hold the entry across the other copy's attempt (a DynamoDB round trip, not a sleep).
      await rt.dynamo.doc.send(
        new UpdateCommand({
          TableName: rt.tables.timers,
          Key: { pk: 'probe', sk: 'probe' },
          UpdateExpression: 'ADD n :one',
          ExpressionAttributeValues: { ':one': 1 },
        }),
      );
      running--;
    };
    const [a, b] = [sweeper(act), sweeper(act)];
    const outcomes = await Promise.all([a.fire(e, nowMs), b.fire(e, nowMs)]);
    expect(outcomes.sort()).toEqual(['done', 'taken']);
    expect(overlap).toBe(false);
  });
});
