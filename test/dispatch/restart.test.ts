import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { dispatchIdFor } from '../../shared/storage/ledger/dispatches.js';
import { getDispatch } from '../../shared/ledger/queries.js';
import type { Runtime } from '../../shared/runtime.js';
import { dispatcherWorker } from '../../workers/dispatcher/index.js';
import { testRuntime } from '../helpers/stack.js';
import {
  consentEvent,
  publish,
  sandboxApp,
  startReceiver,
  waitForDispatch,
  type Receiver,
} from './helpers.js';

/**
 * Durability: the worker is stopped between attempts (a new worker takes over from the
 * due-index), or cut off mid-attempt (a drain bound shorter than the hanging request, so the
 * attempt is aborted and never recorded: its event stays uncommitted in Kafka and the next
 * worker consumes it again).
 */
let rt: Runtime;
let rcv: Receiver;
beforeAll(async () => {
  rcv = await startReceiver();
  rt = await testRuntime('dispatch-restart', {
    WEBHOOK_TIMEOUT_MS: '1500',
    DISPATCH_SAFETY_NET_MS: '4000',
    DISPATCH_SWEEP_INTERVAL_MS: '200',
    SHUTDOWN_TIMEOUT_MS: '300',
  });
});
afterAll(async () => {
  rcv.releaseAll();
  await rt.close();
  await rcv.close();
});

describe('worker restarts', () => {
  it('a retry scheduled before a stop is made after the restart', async () => {
    // Time scale 2: the retry is due 2–3 s after the first attempt.
    const { app } = await sandboxApp(rt, rcv.url('/later'), 2);
    rcv.on('/later', (_r, res, n) => res.writeHead(n === 0 ? 500 : 200).end());
    const e = consentEvent(app);
    const dispatchId = dispatchIdFor(e.id, `${app.appId}:webhook`);
    const first = await dispatcherWorker.start(rt);
    await publish(rt, [e]);
    const pending = await waitForDispatch(rt, dispatchId, (d) => expect(d.attemptCount).toBe(1));
    await first.stop();
    await first.stop(); // idempotent
    // Past the retry's due time with no worker running: nothing was attempted.
    const due = Date.parse(pending.nextAttemptAt!);
    await vi.waitFor(() => expect(Date.now()).toBeGreaterThan(due + 300), {
      timeout: 5000,
      interval: 100,
    });
    expect(rcv.at('/later')).toHaveLength(1);

    const second = await dispatcherWorker.start(rt);
    try {
      const d = await waitForDispatch(rt, dispatchId, (x) =>
        expect(x.deliveryStatus).toBe('delivered'),
      );
      expect(d.attempts.map((a) => [a.attempt, a.outcome])).toEqual([
        [1, 'failed'],
        [2, 'delivered'],
      ]);
      const [a, b] = rcv.at('/later');
      expect(b!.headers['webhook-id']).toBe(a!.headers['webhook-id']);
      expect(b!.headers['x-svc-attempt']).toBe('2');
    } finally {
      await second.stop();
    }
  });

  it('a first attempt cut off mid-flight is made again after the restart (its event was never committed)', async () => {
    const { app } = await sandboxApp(rt, rcv.url('/cut'));
    rcv.on('/cut', (_r, res, n) => {
      if (n > 0) res.end('ok'); // the first request hangs until the worker gives up on it
    });
    const e = consentEvent(app);
    const dispatchId = dispatchIdFor(e.id, `${app.appId}:webhook`);
    const first = await dispatcherWorker.start(rt);
    await publish(rt, [e]);
    await vi.waitFor(() => expect(rcv.at('/cut')).toHaveLength(1), { timeout: 15_000 });
    await first.stop(); // the drain bound (300 ms) is shorter than the hanging request: aborted
    // Nothing reached the ledger: the dispatch is written with its first recorded attempt.
    expect(await getDispatch(rt, dispatchId)).toBeUndefined();

    const second = await dispatcherWorker.start(rt);
    try {
      const d = await waitForDispatch(rt, dispatchId, (x) =>
        expect(x.deliveryStatus).toBe('delivered'),
      );
      expect(d.attempts).toHaveLength(1);
      expect(d.attempts[0]).toMatchObject({ attempt: 1, statusCode: 200, trigger: 'first' });
      const [a, b] = rcv.at('/cut');
      expect(b!.headers['webhook-id']).toBe(a!.headers['webhook-id']);
      expect(b!.headers['x-svc-attempt']).toBe('1'); // the unrecorded attempt is redone, not skipped
    } finally {
      await second.stop();
    }
  });

  it('after its offsets are reset, a new worker sends nothing already recorded again', async () => {
    const { app } = await sandboxApp(rt, rcv.url('/reset'));
    const events = [consentEvent(app), consentEvent(app), consentEvent(app)];
    const first = await dispatcherWorker.start(rt);
    await publish(rt, events);
    for (const e of events)
      await waitForDispatch(rt, dispatchIdFor(e.id, `${app.appId}:webhook`), (x) =>
        expect(x.deliveryStatus).toBe('delivered'),
      );
    await first.stop();
    const before = await Promise.all(
      events.map((e) => getDispatch(rt, dispatchIdFor(e.id, `${app.appId}:webhook`))),
    );

    // As if the commits had been lost: the group starts again from the beginning.
    const admin = rt.kafka.admin();
    await admin.connect();
    await admin.resetOffsets({
      groupId: `${rt.config.TOPIC_PREFIX}dispatcher`,
      topic: rt.topics.consentEvents,
      earliest: true,
    });
    await admin.disconnect();

    const second = await dispatcherWorker.start(rt);
    try {
      const sentinel = consentEvent(app);
      await publish(rt, [sentinel]);
      await waitForDispatch(rt, dispatchIdFor(sentinel.id, `${app.appId}:webhook`), (x) =>
        expect(x.deliveryStatus).toBe('delivered'),
      );
      // Each event went out once; the records are untouched.
      const ids = rcv.at('/reset').map((r) => r.headers['webhook-id']);
      expect(ids).toHaveLength(4);
      expect(new Set(ids).size).toBe(4);
      const after = await Promise.all(
        events.map((e) => getDispatch(rt, dispatchIdFor(e.id, `${app.appId}:webhook`))),
      );
      expect(after).toEqual(before);
    } finally {
      await second.stop();
    }
  });

  it('a late copy of an event recorded before the restart is looked up and not sent again', async () => {
    const { app } = await sandboxApp(rt, rcv.url('/late'));
    // Created ten minutes ago: the outbox relay may publish such a copy late.
    const e = consentEvent(app, { createdAt: new Date(Date.now() - 600_000).toISOString() });
    const dispatchId = dispatchIdFor(e.id, `${app.appId}:webhook`);
    const first = await dispatcherWorker.start(rt);
    await publish(rt, [e]);
    const recorded = await waitForDispatch(rt, dispatchId, (x) =>
      expect(x.deliveryStatus).toBe('delivered'),
    );
    await first.stop();

    const second = await dispatcherWorker.start(rt);
    try {
      await publish(rt, [e]); // the late copy, after the new assignment
      const sentinel = consentEvent(app);
      await publish(rt, [sentinel], { key: `${app.appId}:${e.data.referenceId}` });
      await waitForDispatch(rt, dispatchIdFor(sentinel.id, `${app.appId}:webhook`), (x) =>
        expect(x.deliveryStatus).toBe('delivered'),
      );
      expect(rcv.at('/late').filter((r) => r.headers['webhook-id'] === dispatchId)).toHaveLength(1);
      expect(await getDispatch(rt, dispatchId)).toEqual(recorded);
    } finally {
      await second.stop();
    }
  });
});
