import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it, vi } from 'vitest';
import { rotateSecret } from '../../shared/domain/apps.js';
import { dispatchPk } from '../../shared/storage/ledger/dispatches.js';
import { unpackDispatch } from '../../shared/storage/ledger/packed.js';
import { itemBytes } from '../../shared/storage/billing.js';
import { verifyDispatchChain } from '../../shared/ledger/queries.js';
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

const f = useDispatcher('dispatch-delivery', {
  WEBHOOK_TIMEOUT_MS: '800',
  DISPATCH_SAFETY_NET_MS: '4000',
  DISPATCH_SWEEP_INTERVAL_MS: '200',
  // One clock here: events created after the assignment are fresh at once (the fast path).
  DISPATCH_CLOCK_SKEW_MS: '0',
});

const headersOf = (r: { headers: Record<string, unknown> }) => r.headers as Record<string, string>;
const verifier = (key: string) => new Webhook(Buffer.from(key), { format: 'raw' });

describe('webhook delivery (real Kafka, DynamoDB Local, loopback receiver)', () => {
  it('POSTs the exact event, signed, with every header, and ledgers the attempt', async () => {
    const { app, secretKey } = await sandboxApp(f.p.rt, f.rcv.url('/signed'));
    const e = consentEvent(app, { type: 'consent.withdrawn' });
    await publish(f.p.rt, [e]);
    await vi.waitFor(() => expect(f.rcv.at('/signed')).toHaveLength(1), { timeout: 15_000 });
    const r = f.rcv.at('/signed')[0]!;
    const h = headersOf(r);
    const dispatchId = idOf(app.appId, e.id);
    expect(dispatchId).toMatch(/^dsp_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(r.body).toBe(JSON.stringify(e));
    expect(verifier(secretKey).verify(r.body, h)).toEqual(e);
    expect(h).toMatchObject({
      'content-type': 'application/json',
      'user-agent': 'svc-webhooks/1',
      'x-svc-dispatch-id': dispatchId,
      'webhook-id': dispatchId,
      'x-svc-event': 'consent.withdrawn',
      'x-svc-attempt': '1',
    });
    expect(Math.abs(Number(h['webhook-timestamp']) - r.at / 1000)).toBeLessThan(5);
    expect(h['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);

    const d = await waitForDispatch(f.p.rt, dispatchId, (x) =>
      expect(x.deliveryStatus).toBe('delivered'),
    );
    expect(d).toMatchObject({
      dispatchId,
      eventId: e.id,
      event: 'consent.withdrawn',
      appId: app.appId,
      referenceId: e.data.referenceId,
      createdAt: e.createdAt,
      postbackRequired: true,
      postbackDueAt: e.data.postback!.dueAt,
      complianceFlag: null,
      attemptCount: 1,
      nextAttemptAt: null,
    });
    expect(d.attempts).toEqual([
      expect.objectContaining({
        attempt: 1,
        trigger: 'first',
        statusCode: 200,
        outcome: 'delivered',
        // A loopback receiver's reply is never kept (only a public one's).
        responseExcerpt: '',
        destination: f.rcv.url('/signed'),
      }),
    ]);
    expect(d.attempts[0]!.errorClass).toBeUndefined();
    expect(await verifyDispatchChain(f.p.rt, dispatchId)).toEqual({ ok: true, entries: 2 });
    const metrics = await f.p.rt.registry.getSingleMetricAsString('svc_webhook_deliveries_total');
    expect(metrics).toMatch(/event="consent.withdrawn",outcome="delivered"\} [1-9]/);
    const e2e = await f.p.rt.registry.getSingleMetricAsString(
      'svc_webhook_end_to_end_latency_seconds',
    );
    expect(e2e).toMatch(/_count\{event="consent.withdrawn"\} [1-9]/);
  });

  it('retries a 500 with the same webhook-id and a new timestamp', async () => {
    // Time scale 3: the 5 s retry comes after 1.3–2 s, so the Unix-second timestamp must move.
    const { app, secretKey } = await sandboxApp(f.p.rt, f.rcv.url('/flaky'), 3);
    f.rcv.on('/flaky', (_r, res, n) =>
      res.writeHead(n === 0 ? 500 : 200).end(n === 0 ? 'boom' : 'ok'),
    );
    const e = consentEvent(app);
    await publish(f.p.rt, [e]);
    const dispatchId = idOf(app.appId, e.id);
    const d = await waitForDispatch(f.p.rt, dispatchId, (x) =>
      expect(x.deliveryStatus).toBe('delivered'),
    );
    const [a, b] = f.rcv.at('/flaky').map(headersOf);
    expect(a!['webhook-id']).toBe(dispatchId);
    expect(b!['webhook-id']).toBe(dispatchId);
    expect([a!['x-svc-attempt'], b!['x-svc-attempt']]).toEqual(['1', '2']);
    expect(Number(b!['webhook-timestamp'])).toBeGreaterThan(Number(a!['webhook-timestamp']));
    for (const [i, h] of [a!, b!].entries())
      expect(verifier(secretKey).verify(f.rcv.at('/flaky')[i]!.body, h)).toEqual(e);
    const gap = f.rcv.at('/flaky')[1]!.at - f.rcv.at('/flaky')[0]!.at;
    expect(gap).toBeGreaterThanOrEqual(1300);
    expect(
      d.attempts.map((x) => [x.attempt, x.statusCode, x.errorClass, x.outcome, x.trigger]),
    ).toEqual([
      [1, 500, 'http', 'failed', 'first'],
      [2, 200, undefined, 'delivered', 'retry'],
    ]);
    expect(d.attempts[0]!.responseExcerpt).toBe('');
    expect(await verifyDispatchChain(f.p.rt, dispatchId)).toEqual({ ok: true, entries: 3 });
  });

  it('counts an answer slower than WEBHOOK_TIMEOUT_MS as a failed, retried attempt', async () => {
    const { app } = await sandboxApp(f.p.rt, f.rcv.url('/slow'), 3);
    f.rcv.on('/slow', (_r, res, n) => {
      if (n > 0) res.end('ok'); // the first request is left hanging
    });
    const e = consentEvent(app);
    await publish(f.p.rt, [e]);
    const d = await waitForDispatch(f.p.rt, idOf(app.appId, e.id), (x) =>
      expect(x.deliveryStatus).toBe('delivered'),
    );
    expect(d.attempts[0]).toMatchObject({ attempt: 1, errorClass: 'timeout', outcome: 'failed' });
    expect(d.attempts[0]!.statusCode).toBeUndefined();
    expect(d.attempts[0]!.durationMs).toBeGreaterThanOrEqual(790);
    expect(d.attempts[0]!.durationMs).toBeLessThan(3000);
    expect(d.attempts[1]).toMatchObject({ attempt: 2, statusCode: 200, outcome: 'delivered' });
  });

  it('never follows a redirect: a 302 is a failure and its Location is never fetched', async () => {
    const { app } = await sandboxApp(f.p.rt, f.rcv.url('/moved'));
    f.rcv.on('/moved', (_r, res) =>
      res.writeHead(302, { location: f.rcv.url('/moved-target') }).end(),
    );
    const e = consentEvent(app);
    await publish(f.p.rt, [e]);
    const d = await waitForDispatch(f.p.rt, idOf(app.appId, e.id), (x) =>
      expect(x.attemptCount).toBe(1),
    );
    expect(d.attempts[0]).toMatchObject({
      statusCode: 302,
      errorClass: 'redirect',
      outcome: 'failed',
    });
    expect(d.deliveryStatus).toBe('pending');
    expect(f.rcv.at('/moved')).toHaveLength(1);
    expect(f.rcv.at('/moved-target')).toHaveLength(0);
  });

  it('disables the endpoint on 410 Gone, e-mails the contact, and sends it nothing more', async () => {
    const notifications = await collectTopic(f.p.rt.kafka, f.p.rt.topics.notifications);
    const { app } = await sandboxApp(f.p.rt, f.rcv.url('/gone'));
    f.rcv.on('/gone', (_r, res) => res.writeHead(410).end('gone'));
    const first = consentEvent(app);
    await publish(f.p.rt, [first]);
    const d = await waitForDispatch(f.p.rt, idOf(app.appId, first.id), (x) =>
      expect(x.deliveryStatus).toBe('failed'),
    );
    expect(d.attempts).toHaveLength(1);
    expect(d.attempts[0]).toMatchObject({ statusCode: 410, errorClass: 'http' });
    await vi.waitFor(async () =>
      expect((await getEndpointState(f.p.rt, app.appId))?.disabledReason).toBe('gone'),
    );
    await vi.waitFor(
      () =>
        expect(notifications.messages.map((m) => m.value)).toContainEqual(
          expect.objectContaining({
            type: 'endpoint.disabled',
            appId: app.appId,
            to: 'ops@shop.example',
            reason: 'gone',
          }),
        ),
      { timeout: 15_000 },
    );
    await notifications.stop();

    const second = consentEvent(app);
    await publish(f.p.rt, [second]);
    const d2 = await waitForDispatch(f.p.rt, idOf(app.appId, second.id), (x) =>
      expect(x.deliveryStatus).toBe('failed'),
    );
    expect(d2.attempts[0]).toMatchObject({ errorClass: 'endpoint_disabled', durationMs: 0 });
    expect(f.rcv.at('/gone')).toHaveLength(1);
    expect(
      await f.p.rt.registry.getSingleMetricAsString('svc_webhook_endpoints_disabled_total'),
    ).toMatch(/reason="gone"\} 1/);
  });

  it('honours Retry-After on 503, within [delay, 2 × delay]', async () => {
    // Time scale 2: the first retry delay is 2–3 s, so Retry-After: 4 is inside the clamp.
    const { app } = await sandboxApp(f.p.rt, f.rcv.url('/busy'), 2);
    f.rcv.on('/busy', (_r, res, n) =>
      n === 0 ? res.writeHead(503, { 'retry-after': '4' }).end() : res.end('ok'),
    );
    const e = consentEvent(app);
    await publish(f.p.rt, [e]);
    const dispatchId = idOf(app.appId, e.id);
    const after1 = await waitForDispatch(f.p.rt, dispatchId, (x) => expect(x.attemptCount).toBe(1));
    const a1 = after1.attempts[0]!;
    const planned = Date.parse(after1.nextAttemptAt!) - (Date.parse(a1.time) + a1.durationMs);
    expect(Math.abs(planned - 4000)).toBeLessThanOrEqual(2);
    await waitForDispatch(f.p.rt, dispatchId, (x) => expect(x.deliveryStatus).toBe('delivered'));
    const [r1, r2] = f.rcv.at('/busy');
    expect(r2!.at - r1!.at).toBeGreaterThanOrEqual(3900);
  });

  it('clamps a Retry-After beyond 2 × delay', async () => {
    const { app } = await sandboxApp(f.p.rt, f.rcv.url('/throttled'), 2);
    f.rcv.on('/throttled', (_r, res) => res.writeHead(429, { 'retry-after': '3600' }).end());
    const e = consentEvent(app);
    await publish(f.p.rt, [e]);
    const d = await waitForDispatch(f.p.rt, idOf(app.appId, e.id), (x) =>
      expect(x.attemptCount).toBe(1),
    );
    const a1 = d.attempts[0]!;
    const planned = Date.parse(d.nextAttemptAt!) - (Date.parse(a1.time) + a1.durationMs);
    // base 2.5 s ± 20 % → 2 × delay is 4–6 s; an hour was asked for
    expect(planned).toBeGreaterThanOrEqual(3998);
    expect(planned).toBeLessThanOrEqual(6002);
  });

  it('signs each attempt with the secret current at send time (rotation mid-retry)', async () => {
    const { app, secretKey: oldKey } = await sandboxApp(f.p.rt, f.rcv.url('/rotate'), 3);
    f.rcv.on('/rotate', (_r, res, n) => res.writeHead(n === 0 ? 500 : 200).end());
    const e = consentEvent(app);
    await publish(f.p.rt, [e]);
    const dispatchId = idOf(app.appId, e.id);
    await waitForDispatch(f.p.rt, dispatchId, (x) => expect(x.attemptCount).toBe(1));
    const { secretKey: newKey } = await rotateSecret(f.p.rt, app.appId);
    await waitForDispatch(f.p.rt, dispatchId, (x) => expect(x.deliveryStatus).toBe('delivered'));
    const [r1, r2] = f.rcv.at('/rotate');
    expect(verifier(oldKey).verify(r1!.body, headersOf(r1!))).toEqual(e);
    expect(verifier(newKey).verify(r2!.body, headersOf(r2!))).toEqual(e);
    expect(() => verifier(oldKey).verify(r2!.body, headersOf(r2!))).toThrow();
  });

  it('records a fresh event with its first attempt in one group-committed item', async () => {
    const { app, secretKey } = await sandboxApp(f.p.rt, f.rcv.url('/fresh'));
    const events = [consentEvent(app), consentEvent(app), consentEvent(app)];
    await publish(f.p.rt, events);
    for (const e of events) {
      const d = await waitForDispatch(f.p.rt, idOf(app.appId, e.id), (x) =>
        expect(x.deliveryStatus).toBe('delivered'),
      );
      expect(d.attempts).toEqual([
        expect.objectContaining({ attempt: 1, statusCode: 200, trigger: 'first' }),
      ]);
      expect(d.headHash).toBe(d.attempts[0]!.hash);
      expect(await verifyDispatchChain(f.p.rt, d.dispatchId)).toEqual({ ok: true, entries: 2 });
      // One ledger item per first delivery: the dispatch item, holding its first attempt.
      const stored = await f.p.rt.dynamo.doc.send(
        new QueryCommand({
          TableName: f.p.rt.tables.ledger,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': dispatchPk(d.dispatchId) },
          ConsistentRead: true,
        }),
      );
      expect(stored.Items?.map((i) => i.sk)).toEqual(['DSP']);
      // Packed (shared/storage/ledger/packed.ts): body and first attempt in `dz`, under the kilobyte
      // AWS bills one write unit for, but for the change stamp the first dispatch of an app
      // carries (changes.ts).
      const item = stored.Items![0]!;
      expect(item.firstAttempt).toBeUndefined();
      expect(item.body).toBeUndefined();
      const { gsi3pk: _pk, gsi3sk: _sk, ...unstamped } = item;
      expect(itemBytes(unstamped)).toBeLessThan(1024);
      expect(unpackDispatch(item).firstAttempt).toMatchObject({ attempt: 1, statusCode: 200 });
    }
    for (const r of f.rcv.at('/fresh'))
      expect(verifier(secretKey).verify(r.body, headersOf(r))).toBeTruthy();
    // Written by the group commit (not one transaction per dispatch).
    expect(await f.p.rt.registry.getSingleMetricAsString('svc_webhook_ledger_batch_size')).toMatch(
      /svc_webhook_ledger_batch_size_count [1-9]/,
    );
  });

  it('makes no second dispatch for a redelivered event', async () => {
    const { app } = await sandboxApp(f.p.rt, f.rcv.url('/once'));
    const e = consentEvent(app);
    const sentinel = consentEvent(app);
    const key = `${app.appId}:same-partition`;
    await publish(f.p.rt, [e], { key });
    await publish(f.p.rt, [e], { key }); // the same event again, as a redelivery would bring it
    await publish(f.p.rt, [sentinel], { key });
    await waitForDispatch(f.p.rt, idOf(app.appId, sentinel.id), (x) =>
      expect(x.deliveryStatus).toBe('delivered'),
    );
    await waitForDispatch(f.p.rt, idOf(app.appId, e.id), (x) =>
      expect(x.deliveryStatus).toBe('delivered'),
    );
    const ids = f.rcv.at('/once').map((r) => headersOf(r)['webhook-id']);
    expect(ids.sort()).toEqual([idOf(app.appId, e.id), idOf(app.appId, sentinel.id)].sort());
    expect(await f.p.rt.registry.getSingleMetricAsString('svc_webhook_dispatches_total')).toMatch(
      /result="duplicate"\} [1-9]/,
    );
  });
});
