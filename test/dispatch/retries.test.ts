import { describe, expect, it, vi } from 'vitest';
import { getEndpointState } from '../../shared/storage/webhooks/endpoints.js';
import { collectTopic } from '../helpers/kafka.js';
import {
  consentEvent,
  publish,
  sandboxApp,
  waitForDispatch,
  useDispatcher,
  dispatchIdOf as idOf,
} from './helpers.js';

/**
 * The whole schedule, compressed by sandbox time scales: at 100 000× the eight attempts take
 * about a second; at 20 000× the endpoint's failing streak passes the (shortened) disable
 * window between attempts 6 and 7.
 */
const f = useDispatcher('dispatch-retries', {
  WEBHOOK_TIMEOUT_MS: '1000',
  DISPATCH_SAFETY_NET_MS: '5000',
  DISPATCH_SWEEP_INTERVAL_MS: '200',
  WEBHOOK_DISABLE_AFTER_MS: '2000',
});

describe('retry schedule end to end', () => {
  it('makes 8 attempts, then the dispatch is failed', async () => {
    const { app } = await sandboxApp(f.p.rt, f.rcv.url('/down'), 100_000);
    f.rcv.on('/down', (_r, res) => res.writeHead(500).end());
    const e = consentEvent(app);
    await publish(f.p.rt, [e]);
    const d = await waitForDispatch(f.p.rt, idOf(app.appId, e.id), (x) =>
      expect(x.deliveryStatus).toBe('failed'),
    );
    expect(d.attemptCount).toBe(8);
    expect(d.nextAttemptAt).toBeNull();
    expect(d.attempts.map((a) => a.attempt)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(d.attempts.every((a) => a.statusCode === 500 && a.outcome === 'failed')).toBe(true);
    expect(f.rcv.at('/down').map((r) => r.headers['x-svc-attempt'])).toEqual([
      '1',
      '2',
      '3',
      '4',
      '5',
      '6',
      '7',
      '8',
    ]);
    expect(new Set(f.rcv.at('/down').map((r) => r.headers['webhook-id']))).toEqual(
      new Set([d.dispatchId]),
    );
    // The gaps follow the schedule: 5 h and 10 h at 100 000× are 180 ms and 360 ms, −20 % at most.
    const at = f.rcv.at('/down').map((r) => r.at);
    expect(at[5]! - at[4]!).toBeGreaterThanOrEqual(144);
    expect(at[7]! - at[6]!).toBeGreaterThanOrEqual(288);
    expect(
      await f.p.rt.registry.getSingleMetricAsString('svc_webhook_retries_scheduled_total'),
    ).toMatch(/event="consent.granted"\} 7/);
    // About a second of failures is inside the 2 s disable window: the endpoint stays enabled.
    expect((await getEndpointState(f.p.rt, app.appId))?.disabledAt).toBeUndefined();
  });

  it('writes each later attempt as one update of the dispatch item, and nothing else', async () => {
    const { app } = await sandboxApp(f.p.rt, f.rcv.url('/down-writes'), 100_000);
    f.rcv.on('/down-writes', (_r, res) => res.writeHead(500).end());
    const e = consentEvent(app);
    const id = idOf(app.appId, e.id);
    // Every item written for this dispatch, in any table, by the process's own client.
    const writes: string[] = [];
    const stack = f.p.rt.dynamo.doc.middlewareStack;
    stack.add(
      (next, context) => async (args) => {
        const name = context.commandName ?? '?';
        const input = args.input as Record<string, unknown>;
        const mine = (x: unknown) => JSON.stringify(x).includes(id);
        const table = (t: unknown) => (t === f.p.rt.tables.ledger ? 'ledger' : String(t));
        if (/^(Put|Update|Delete)ItemCommand$/.test(name) && mine(input))
          writes.push(`${name} ${table(input.TableName)}`);
        if (name === 'BatchWriteItemCommand')
          for (const [t, reqs] of Object.entries(input.RequestItems as Record<string, unknown[]>))
            for (const r of reqs) if (mine(r)) writes.push(`${name} ${table(t)}`);
        if (name === 'TransactWriteItemsCommand')
          for (const item of input.TransactItems as Record<string, { TableName: string }>[]) {
            const [kind, op] = Object.entries(item)[0]!;
            if (kind !== 'ConditionCheck' && mine(op))
              writes.push(`${name} ${table(op.TableName)}`);
          }
        return next(args);
      },
      { step: 'initialize', name: 'dispatchWrites' },
    );
    try {
      await publish(f.p.rt, [e]);
      const d = await waitForDispatch(f.p.rt, id, (x) => expect(x.deliveryStatus).toBe('failed'));
      expect(d.attemptCount).toBe(8);
      // The first attempt: the dispatch item holding it (one item, batched or conditional).
      expect(writes[0]).toMatch(/^(BatchWriteItemCommand|TransactWriteItemsCommand) ledger$/);
      // Attempts 2…8: one update each, no claim before them, nothing in the timers table.
      expect(writes.slice(1)).toEqual(Array(7).fill('UpdateItemCommand ledger'));
    } finally {
      stack.remove('dispatchWrites');
    }
  });

  it('disables an endpoint with no success for the disable window and e-mails its contact', async () => {
    const notifications = await collectTopic(f.p.rt.kafka, f.p.rt.topics.notifications);
    const { app } = await sandboxApp(f.p.rt, f.rcv.url('/dead'), 20_000);
    f.rcv.on('/dead', (_r, res) => res.writeHead(503).end());
    const e = consentEvent(app);
    await publish(f.p.rt, [e]);
    const d = await waitForDispatch(f.p.rt, idOf(app.appId, e.id), (x) =>
      expect(x.deliveryStatus).toBe('failed'),
    );
    const state = await getEndpointState(f.p.rt, app.appId);
    expect(state).toMatchObject({ disabledReason: 'failing', url: app.webhookUrl });
    expect(
      Date.parse(state!.disabledAt!) - Date.parse(state!.failingSince!),
    ).toBeGreaterThanOrEqual(2000);
    // The attempt after the disable is not made: it is recorded as skipped and ends the dispatch.
    expect(d.attempts.at(-1)).toMatchObject({ errorClass: 'endpoint_disabled' });
    expect(f.rcv.at('/dead')).toHaveLength(d.attemptCount - 1);
    await vi.waitFor(
      () =>
        expect(notifications.messages.map((m) => m.value)).toContainEqual(
          expect.objectContaining({
            type: 'endpoint.disabled',
            appId: app.appId,
            reason: 'failing',
            to: 'ops@shop.example',
          }),
        ),
      { timeout: 15_000 },
    );
    await notifications.stop();
  });

  it('keeps a healthy endpoint enabled after a failure followed by a success', async () => {
    const { app } = await sandboxApp(f.p.rt, f.rcv.url('/recovering'), 100_000);
    f.rcv.on('/recovering', (_r, res, n) => res.writeHead(n < 2 ? 500 : 200).end());
    const e = consentEvent(app);
    await publish(f.p.rt, [e]);
    await waitForDispatch(f.p.rt, idOf(app.appId, e.id), (x) =>
      expect(x.deliveryStatus).toBe('delivered'),
    );
    await vi.waitFor(async () => {
      const s = await getEndpointState(f.p.rt, app.appId);
      expect(s?.lastSuccessAt).toBeDefined();
      expect(s?.failingSince).toBeUndefined();
      expect(s?.disabledAt).toBeUndefined();
    });
  });
});
