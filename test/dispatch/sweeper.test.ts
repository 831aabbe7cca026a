import { GetCommand, PutCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  dispatchPk,
  getDispatchState,
  newDispatchItems,
} from '../../shared/storage/ledger/dispatches.js';
import { recordAttempt } from '../../shared/storage/ledger/attempts.js';
import { listDispatchDue } from '../../shared/storage/ledger/dispatch-due.js';
import { bucketOf, dueEntry } from '../../shared/storage/timers/due.js';
import type { Runtime } from '../../shared/runtime.js';
import type { AttemptJob } from '../../workers/dispatcher/attempt.js';
import type { Lane } from '../../workers/dispatcher/lanes.js';
import { Sweeper } from '../../workers/dispatcher/sweeper.js';
import { testRuntime } from '../helpers/stack.js';
import { consentEvent } from './helpers.js';

/**
 * The retry due-index (the ledger's `due` index of dispatch items) against DynamoDB Local:
 * claims, catch-up after downtime, entries the index still shows after a move.
 */
let rt: Runtime;
beforeAll(async () => {
  rt = await testRuntime('dispatch-sweeper', {
    TIMER_SHARDS: '4',
    DISPATCH_SAFETY_NET_MS: '60000',
  });
});
afterAll(async () => {
  await rt.close();
});

const app = { appId: 'app_sweepersweepersweep', environment: 'sandbox' as const };

/** A stored dispatch whose due entry fires at `dueAtMs`. */
async function storedDispatch(dueAtMs: number) {
  const event = consentEvent(app);
  const created = newDispatchItems(rt, {
    event,
    body: JSON.stringify(event),
    endpoint: `${app.appId}:webhook`,
    nowMs: Date.now(),
    due: (id) => dueEntry(id, app.appId, dueAtMs, 'attempt', rt.config.TIMER_SHARDS),
  });
  await rt.dynamo.doc.send(new TransactWriteCommand({ TransactItems: created.items }));
  return created.state;
}

/** Lanes that are full for the app, as the dispatcher's lanes would report. */
const busy = new Set<Lane>();

function sweeper(
  jobs: AttemptJob[],
  lanes: Lane[] = [],
  leases?: { validUntil: (shard: number) => number },
) {
  return new Sweeper(rt, {
    enqueue: (j, lane) => (jobs.push(j), lanes.push(lane), true),
    room: () => 100,
    accepts: (_appId, lane) => !busy.has(lane),
    ...(leases ? { leases } : {}),
  });
}

/** Changes a stored dispatch item as another writer would have (attempts made, settled…). */
async function setStored(dispatchId: string, update: string, values: Record<string, unknown>) {
  await rt.dynamo.doc.send(
    new UpdateCommand({
      TableName: rt.tables.ledger,
      Key: { pk: dispatchPk(dispatchId), sk: 'DSP' },
      UpdateExpression: update,
      ExpressionAttributeValues: values,
    }),
  );
}

/** The entry a dispatch item carries, as the index lists it. */
const carried = (state: { dispatchId: string; duePk?: string; dueSk?: string }) => ({
  pk: state.duePk!,
  sk: state.dueSk!,
  dispatchId: state.dispatchId,
  appId: app.appId,
  dueAt: state.dueSk!.split('#')[0]!,
  kind: 'attempt' as const,
});

describe('retry due-index sweeper', () => {
  it('lets exactly one of several worker copies claim a due entry', async () => {
    const state = await storedDispatch(Date.now() - 1000);
    const jobs: AttemptJob[] = [];
    const copies = [sweeper(jobs), sweeper(jobs), sweeper(jobs)];
    const entry = dueEntry(state.dispatchId, app.appId, Date.now() - 1000, 'attempt', 4);
    const stored = {
      ...entry,
      pk: state.duePk!,
      sk: state.dueSk!,
      dueAt: state.dueSk!.split('#')[0]!,
    };
    await Promise.all(copies.map((c) => c.fire(stored)));
    expect(jobs).toHaveLength(1);
    expect(jobs[0]).toMatchObject({ trigger: 'first', state: { dispatchId: state.dispatchId } });
    // The claim moved the dispatch's entry on to a safety-net time, on the dispatch item.
    const after = await getDispatchState(rt, state.dispatchId);
    expect(after!.dueSk).not.toBe(state.dueSk);
    expect(after!.dueSk).toBe(jobs[0]!.state.dueSk);
    expect(after!.dueKind).toBe('attempt');
    const safetyAt = Date.parse(after!.dueSk!.split('#')[0]!);
    expect(jobs[0]!.deadlineMs).toBe(safetyAt);
    // The index has it in the safety-net bucket, and no longer in the fired one.
    const shard = Number(after!.duePk!.split('#').at(-1));
    const listed = await listDispatchDue(rt, bucketOf(safetyAt), shard, safetyAt, 100);
    expect(listed).toContainEqual(
      expect.objectContaining({ dispatchId: state.dispatchId, sk: after!.dueSk, kind: 'attempt' }),
    );
    const old = await listDispatchDue(rt, bucketOf(Date.now() - 1000), shard, Date.now(), 100);
    expect(old.map((e) => e.dispatchId)).not.toContain(state.dispatchId);
  });

  it('attempts a retry in a shard this copy leases without claiming it, once at a time', async () => {
    const stored = await storedDispatch(Date.now() - 1000);
    await setStored(stored.dispatchId, 'SET attempts = :one', { ':one': 1 });
    const state = { ...stored, attempts: 1 };
    const entry = carried(state);
    const shard = Number(entry.pk.split('#').at(-1));
    const leaseEnd = Date.now() + 20_000;
    const jobs: AttemptJob[] = [];
    const owner = sweeper(jobs, [], { validUntil: (s) => (s === shard ? leaseEnd : 0) });
    const other = sweeper(jobs, [], { validUntil: (s) => (s === shard ? 0 : leaseEnd) });
    await other.fire(entry); // not its shard
    expect(jobs).toEqual([]);
    await owner.fire(entry);
    await owner.fire(entry); // queued already: not twice
    expect(jobs).toHaveLength(1);
    expect(jobs[0]).toMatchObject({ trigger: 'retry', deadlineMs: leaseEnd });
    // Nothing was written: the dispatch still carries the entry as it was.
    const after = await getDispatchState(rt, state.dispatchId);
    expect(after!.dueSk).toBe(state.dueSk);
    expect(after!.duePk).toBe(state.duePk);
    expect(after!.attempts).toBe(1);
    // Once the job is over without a record (say its deadline came first), it is due again.
    jobs[0]!.done!();
    await owner.fire(entry);
    expect(jobs).toHaveLength(2);
  });

  it('claims a deferred first attempt even in a shard this copy leases', async () => {
    const state = await storedDispatch(Date.now() - 1000);
    const entry = carried(state);
    const shard = Number(entry.pk.split('#').at(-1));
    const jobs: AttemptJob[] = [];
    await sweeper(jobs, [], { validUntil: (s) => (s === shard ? Date.now() + 20_000 : 0) }).fire(
      entry,
    );
    expect(jobs).toHaveLength(1);
    expect(jobs[0]!.trigger).toBe('first');
    // Moved on to the safety net, so the next sweeps do not read it while it runs.
    const after = await getDispatchState(rt, state.dispatchId);
    expect(after!.dueSk).not.toBe(state.dueSk);
    expect(jobs[0]!.deadlineMs).toBe(Date.parse(after!.dueSk!.split('#')[0]!));
  });

  it('catches up on buckets left behind while no worker ran, and moves the watermark on', async () => {
    const now = Date.now();
    const longAgo = now - 20 * 60_000;
    // As if the last sweep ran 30 minutes ago.
    for (let shard = 0; shard < 4; shard++)
      await rt.dynamo.doc.send(
        new PutCommand({
          TableName: rt.tables.timers,
          Item: { pk: 'retry#watermark', sk: String(shard), bucket: bucketOf(now) - 30 },
        }),
      );
    const state = await storedDispatch(longAgo);
    const jobs: AttemptJob[] = [];
    const s = sweeper(jobs);
    await s.start();
    try {
      await s.sweep();
      expect(jobs.map((j) => j.state.dispatchId)).toContain(state.dispatchId);
      // The next pass finds the old buckets empty and moves past them for good.
      await s.sweep();
      const wm = await rt.dynamo.doc.send(
        new GetCommand({ TableName: rt.tables.timers, Key: { pk: 'retry#watermark', sk: '0' } }),
      );
      expect(Number(wm.Item!.bucket)).toBeGreaterThanOrEqual(bucketOf(now) - 2);
      for (let shard = 0; shard < 4; shard++)
        expect(await listDispatchDue(rt, bucketOf(longAgo), shard, now, 10)).toEqual([]);
    } finally {
      await s.stop();
      await s.stop();
    }
  });

  it('ignores an entry its dispatch no longer names (an index behind a move), without attempting it', async () => {
    const state = await storedDispatch(Date.now() + 3_600_000);
    const stale = dueEntry(state.dispatchId, app.appId, Date.now() - 500, 'attempt', 4);
    const jobs: AttemptJob[] = [];
    await sweeper(jobs).fire(stale);
    expect(jobs).toEqual([]);
    const after = await getDispatchState(rt, state.dispatchId);
    expect(after!.dueSk).toBe(state.dueSk);
    expect(after!.attempts).toBe(0);
  });

  it('hands a never-attempted dispatch to the first-attempt lane and a retry to the retry lane', async () => {
    const fresh = await storedDispatch(Date.now() - 100);
    const retried = await storedDispatch(Date.now() - 100);
    await setStored(retried.dispatchId, 'SET attempts = :one', { ':one': 1 });
    const jobs: AttemptJob[] = [];
    const lanes: Lane[] = [];
    // The retry lane is full: a retry is snoozed, a first attempt still goes out.
    busy.add('retry');
    try {
      for (const st of [fresh, retried]) await sweeper(jobs, lanes).fire(carried(st));
    } finally {
      busy.clear();
    }
    expect(jobs.map((j) => [j.state.dispatchId, j.trigger])).toEqual([[fresh.dispatchId, 'first']]);
    expect(lanes).toEqual(['first']);
    const snoozed = await getDispatchState(rt, retried.dispatchId);
    expect(snoozed!.dueSk).not.toBe(retried.dueSk);
    expect(snoozed!.dueSnoozes).toBe(1);

    const more: AttemptJob[] = [];
    const moreLanes: Lane[] = [];
    await sweeper(more, moreLanes).fire({
      pk: snoozed!.duePk!,
      sk: snoozed!.dueSk!,
      dispatchId: retried.dispatchId,
      appId: app.appId,
      dueAt: snoozed!.dueSk!.split('#')[0]!,
      kind: 'attempt',
    });
    expect(more.map((j) => j.trigger)).toEqual(['retry']);
    expect(moreLanes).toEqual(['retry']);
  });

  it('snoozes the entry of an endpoint whose lane is full instead of queueing it, twice as long each time', async () => {
    const state = await storedDispatch(Date.now() - 100);
    const jobs: AttemptJob[] = [];
    const dueIn = async () => {
      const s = await getDispatchState(rt, state.dispatchId);
      return { state: s!, inMs: Date.parse(s!.dueSk!.split('#')[0]!) - Date.now() };
    };
    busy.add('first'); // never attempted: the first-attempt lane
    try {
      await sweeper(jobs).fire(carried(state));
      const first = await dueIn();
      expect(first.state.dueSnoozes).toBe(1);
      // A sweep interval (1 s here) on, ±20 %.
      expect(first.inMs).toBeGreaterThan(600);
      expect(first.inMs).toBeLessThanOrEqual(1_200);
      await sweeper(jobs).fire(carried(first.state));
      const second = await dueIn();
      expect(second.state.dueSnoozes).toBe(2);
      expect(second.inMs).toBeGreaterThan(1_400);
      expect(second.inMs).toBeLessThanOrEqual(2_400);
      // Never more than the safety net (60 s here).
      for (let i = 0; i < 5; i++) await sweeper(jobs).fire(carried((await dueIn()).state));
      const capped = await dueIn();
      expect(capped.state.dueSnoozes).toBe(7);
      expect(capped.inMs).toBeGreaterThan(40_000);
      expect(capped.inMs).toBeLessThanOrEqual(60_000);
    } finally {
      busy.clear();
    }
    expect(jobs).toEqual([]);
    expect((await getDispatchState(rt, state.dispatchId))!.attempts).toBe(0);
  });

  it('an attempt recorded clears the snoozes of the entry it replaces', async () => {
    const state = await storedDispatch(Date.now() - 100);
    busy.add('first');
    try {
      await sweeper([]).fire(carried(state));
    } finally {
      busy.clear();
    }
    const snoozed = (await getDispatchState(rt, state.dispatchId))!;
    expect(snoozed.dueSnoozes).toBe(1);
    const next = dueEntry(state.dispatchId, app.appId, Date.now() + 5_000, 'attempt', 4);
    const { result } = await recordAttempt(rt, {
      state: snoozed,
      entry: {
        trigger: 'first',
        time: new Date().toISOString(),
        durationMs: 3,
        destination: 'http://127.0.0.1/hook',
        statusCode: 500,
        responseExcerpt: '',
        outcome: 'failed',
      },
      deliveryStatus: 'pending',
      next,
    });
    expect(result).toBe('recorded');
    const after = (await getDispatchState(rt, state.dispatchId))!;
    expect(after).toMatchObject({ attempts: 1, dueSk: next.sk, dueKind: 'attempt' });
    expect(after.dueSnoozes).toBeUndefined();
  });

  it('retires an automatic entry left on a settled dispatch', async () => {
    const state = await storedDispatch(Date.now() - 100);
    await setStored(state.dispatchId, 'SET deliveryStatus = :d', { ':d': 'delivered' });
    const entry = carried(state);
    const jobs: AttemptJob[] = [];
    await sweeper(jobs).fire(entry);
    expect(jobs).toEqual([]);
    const after = await getDispatchState(rt, state.dispatchId);
    expect(after!.dueSk).toBeUndefined();
    expect(after!.duePk).toBeUndefined();
    expect(after!.dueKind).toBeUndefined();
  });
});
