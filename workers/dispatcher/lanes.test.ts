import { describe, expect, it } from 'vitest';
import { Lanes, type Lane } from './lanes.js';

/** Jobs that finish only when the test says so. */
function harness(
  o: {
    perEndpoint?: number;
    total?: number;
    retryPer?: number;
    retryTotal?: number;
    maxBacklog?: number;
    endpointMaxBacklog?: number;
    roomTimeoutMs?: number;
  } = {},
) {
  const started: string[] = [];
  const release = new Map<string, () => void>();
  const lanes = new Lanes<string>({
    limits: {
      first: { perEndpoint: o.perEndpoint ?? 2, total: o.total ?? 10 },
      retry: { perEndpoint: o.retryPer ?? 1, total: o.retryTotal ?? 10 },
    },
    maxBacklog: o.maxBacklog ?? 100,
    endpointMaxBacklog: o.endpointMaxBacklog ?? 100,
    ...(o.roomTimeoutMs ? { roomTimeoutMs: o.roomTimeoutMs } : {}),
    onError: () => undefined,
    run: (job: string, lane: Lane) =>
      new Promise<void>((resolve) => {
        started.push(`${lane}:${job}`);
        release.set(job, resolve);
      }),
  });
  const finish = async (job: string) => {
    release.get(job)!();
    await new Promise((r) => setImmediate(r));
  };
  return { lanes, started, finish };
}

describe('Lanes', () => {
  it('bounds attempts per endpoint; other endpoints are not held back', () => {
    const { lanes, started } = harness({ perEndpoint: 2 });
    for (let i = 0; i < 5; i++) lanes.enqueue('slow', 'first', `s${i}`);
    lanes.enqueue('fast', 'first', 'f0');
    lanes.enqueue('fast', 'first', 'f1');
    expect(started).toEqual(['first:s0', 'first:s1', 'first:f0', 'first:f1']);
    expect(lanes.inFlight.first).toBe(4);
    expect(lanes.queued.first).toBe(3);
  });

  it('takes endpoints in turn when the process budget is the limit', async () => {
    const { lanes, started, finish } = harness({ perEndpoint: 5, total: 2 });
    for (const j of ['a0', 'a1', 'a2', 'a3']) lanes.enqueue('a', 'first', j);
    for (const j of ['b0', 'b1']) lanes.enqueue('b', 'first', j);
    expect(started).toEqual(['first:a0', 'first:a1']);
    await finish('a0');
    expect(started.at(-1)).toBe('first:a2');
    await finish('a1'); // a just had a turn: b goes next
    expect(started.at(-1)).toBe('first:b0');
    await finish('a2');
    expect(started.at(-1)).toBe('first:a3');
    await finish('a3');
    expect(started.at(-1)).toBe('first:b1');
  });

  it('runs retries on their own budget, so they neither starve nor are starved by first attempts', async () => {
    const { lanes, started, finish } = harness({
      perEndpoint: 1,
      total: 1,
      retryPer: 1,
      retryTotal: 1,
    });
    lanes.enqueue('a', 'first', 'f0');
    lanes.enqueue('a', 'first', 'f1');
    lanes.enqueue('a', 'retry', 'r0');
    lanes.enqueue('a', 'retry', 'r1');
    expect(started).toEqual(['first:f0', 'retry:r0']);
    await finish('r0');
    expect(started).toEqual(['first:f0', 'retry:r0', 'retry:r1']);
    await finish('f0');
    expect(started.at(-1)).toBe('first:f1');
    expect(lanes.retryRoom()).toBe(1); // 2 × total − queued − in flight
  });

  it('refuses work beyond an endpoint backlog', () => {
    const { lanes } = harness({ perEndpoint: 1, endpointMaxBacklog: 2 });
    expect(['x0', 'x1', 'x2', 'x3'].map((j) => lanes.enqueue('x', 'first', j))).toEqual([
      true,
      true,
      true,
      false,
    ]);
    expect(lanes.enqueue('y', 'first', 'y0')).toBe(true);
  });

  it('applies back-pressure while the first-attempt backlog is full', async () => {
    const { lanes, finish } = harness({ perEndpoint: 1, total: 1, maxBacklog: 1 });
    lanes.enqueue('a', 'first', 'a0'); // runs
    lanes.enqueue('a', 'first', 'a1'); // queued: backlog full
    let roomy: boolean | undefined;
    const waiting = lanes.waitForRoom().then((v) => (roomy = v));
    await new Promise((r) => setImmediate(r));
    expect(roomy).toBeUndefined();
    await finish('a0'); // a1 starts, the queue empties
    await waiting;
    expect(roomy).toBe(true);
  });

  it('stops waiting for room after a bound (the caller defers to the due-index)', async () => {
    const { lanes } = harness({ perEndpoint: 1, total: 1, maxBacklog: 1, roomTimeoutMs: 20 });
    lanes.enqueue('a', 'first', 'a0');
    lanes.enqueue('a', 'first', 'a1');
    expect(await lanes.waitForRoom()).toBe(false);
  });

  it('accepts retries for an endpoint only while it has fewer queued than retry slots', () => {
    const { lanes } = harness({ retryPer: 2, retryTotal: 10 });
    expect(lanes.acceptsRetry('a')).toBe(true);
    for (const j of ['r0', 'r1', 'r2']) lanes.enqueue('a', 'retry', j); // two run, one queued
    expect(lanes.acceptsRetry('a')).toBe(true);
    lanes.enqueue('a', 'retry', 'r3');
    expect(lanes.acceptsRetry('a')).toBe(false);
    expect(lanes.acceptsRetry('b')).toBe(true);
    lanes.close();
    expect(lanes.acceptsRetry('b')).toBe(false);
  });

  it('accepts deferred first attempts for an endpoint while its queue is under half its backlog', () => {
    const { lanes } = harness({ perEndpoint: 1, total: 10, endpointMaxBacklog: 4 });
    expect(lanes.acceptsFirst('a')).toBe(true);
    for (const j of ['a0', 'a1', 'a2']) lanes.enqueue('a', 'first', j); // one runs, two queued
    expect(lanes.acceptsFirst('a')).toBe(false);
    expect(lanes.acceptsFirst('b')).toBe(true);
    lanes.close();
    expect(lanes.acceptsFirst('b')).toBe(false);
  });

  it('closes: drops queued jobs, fails waiters, refuses new work, drains the running ones', async () => {
    const { lanes, finish } = harness({ perEndpoint: 1, total: 1, maxBacklog: 1 });
    lanes.enqueue('a', 'first', 'a0');
    lanes.enqueue('a', 'first', 'a1');
    lanes.enqueue('a', 'retry', 'r0');
    const waiter = lanes.waitForRoom();
    expect(lanes.close()).toBe(1);
    await expect(waiter).rejects.toMatchObject({ code: 'SVC_UNAVAILABLE' });
    expect(lanes.enqueue('b', 'first', 'b0')).toBe(false);
    expect(await lanes.drain(10)).toBe(false); // a0 and r0 still running
    const drained = lanes.drain(5000);
    await finish('a0');
    await finish('r0');
    expect(await drained).toBe(true);
    expect(lanes.queued).toEqual({ first: 0, retry: 0 });
  });
});
