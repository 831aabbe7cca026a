import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createClient, createReceiver } from '../../clients/typescript/src/index.js';
import type { ConsentEvent } from '../../shared/domain/consent/events.js';
import { startPipeline, type Pipeline, type PipelineApp } from '../compliance/fixture.js';

/**
 * `webhookOrdering: 'principal'` end to end (docs/webhooks.md, Ordering): a grant whose first
 * attempts fail holds the same principal's withdrawal until the grant's retry is answered 2xx,
 * while other principals' events of the same app go as they come. One process with the
 * record, ledger and admin APIs and the relay, dispatcher, compliance and timers workers, on
 * the real Kafka and DynamoDB Local, with a loopback receiver that verifies each signature.
 */
let f: Pipeline;
let a: PipelineApp;
/** Retries compressed 1000×: 5 ms, 300 ms, 1.8 s, 7.2 s, … */
const SCALE = 1000;

beforeAll(async () => {
  f = await startPipeline('dispatch-ordering', { DISPATCH_SWEEP_INTERVAL_MS: '200' });
  a = await f.createApp(SCALE, { webhookOrdering: 'principal' });
});
afterAll(async () => {
  await f?.close();
});

interface Delivery {
  event: ConsentEvent;
  webhookId: string;
  status: number;
}

describe('per-principal ordering', () => {
  it("holds a principal's withdrawal until its retried grant is answered 2xx; other principals go on", async () => {
    const wh = new Webhook(Buffer.from(a.secretKey), { format: 'raw' });
    const deliveries: Delivery[] = [];
    const userId = 'ordered-user';
    let grantFailures = 0;
    // The app's receiver is the SDK's: it verifies, drops what is older than what it handled,
    // and posts the postbacks the events ask for.
    const applied = new Map<string, ConsentEvent['data']['state']>();
    const sdk = createReceiver({
      secretKey: a.secretKey,
      client: createClient({ baseUrl: f.p.url, secretKey: a.secretKey }),
      handler: (e) => void applied.set(e.data.userId ?? '', e.data.state),
    });
    // The grant's first three attempts fail (about 2 s of retries at this scale).
    f.rcv.on('/hooks', (r, res) => {
      const headers = Object.fromEntries(Object.entries(r.headers).map(([k, v]) => [k, String(v)]));
      const event = wh.verify(r.body, headers) as ConsentEvent;
      const failing =
        event.type === 'consent.granted' && event.data.userId === userId && grantFailures < 3;
      if (failing) grantFailures++;
      const answer = failing ? Promise.resolve({ status: 500, body: {} }) : sdk(r.body, headers);
      void answer.then((ans) => {
        deliveries.push({ event, webhookId: headers['webhook-id']!, status: ans.status });
        res.writeHead(ans.status).end(JSON.stringify(ans.body));
      });
    });
    const http = (method: string, path: string, body?: unknown) =>
      f.http(method, path, body, f.bearer(a));
    const of = (u: string) => deliveries.filter((d) => d.event.data.userId === u);
    const waitFor = <T>(check: () => T) => vi.waitFor(check, { timeout: 30_000, interval: 50 });

    const created = await http('POST', '/api/v1/consents', {
      userId,
      email: 'ordered@mail.example',
      consents: { marketing: false },
    });
    expect(created.status).toBe(201);
    expect(
      (await http('PUT', `/api/v1/consents/${userId}`, { consents: { marketing: true } })).status,
    ).toBe(200);
    await waitFor(() =>
      expect(of(userId).some((d) => d.event.type === 'consent.granted')).toBe(true),
    );
    // The grant is being retried: the person withdraws, and other principals consent.
    expect((await http('DELETE', `/api/v1/consents/${userId}`)).status).toBe(200);
    const others = ['other-1', 'other-2', 'other-3'];
    for (const u of others)
      expect(
        (
          await http('POST', '/api/v1/consents', {
            userId: u,
            email: `${u}@mail.example`,
            consents: { marketing: true },
          })
        ).status,
      ).toBe(201);

    await waitFor(() =>
      expect(of(userId).some((d) => d.event.type === 'consent.withdrawn')).toBe(true),
    );
    const mine = of(userId).map((d) => `${d.event.type} ${d.status}`);
    // Nothing of the withdrawal arrived before the grant's successful retry.
    expect(mine).toEqual([
      'consent.created 200',
      'consent.granted 500',
      'consent.granted 500',
      'consent.granted 500',
      'consent.granted 200',
      'consent.withdrawn 200',
    ]);
    // A receiver applying events as they come ends where the person did.
    const last = of(userId)
      .filter((d) => d.status === 200)
      .at(-1)!;
    expect(last.event.data.state).toEqual({ marketing: 'withdrawn' });
    // The other principals' events were not held behind it: all arrived while the grant
    // was still failing.
    const grantOk = deliveries.findIndex(
      (d) =>
        d.event.data.userId === userId && d.event.type === 'consent.granted' && d.status === 200,
    );
    for (const u of others) {
      const i = deliveries.findIndex((d) => d.event.data.userId === u);
      expect(i, u).toBeGreaterThanOrEqual(0);
      expect(i, u).toBeLessThan(grantOk);
    }
    // The held withdrawal is counted, and so is its release.
    expect(await f.metric('svc_webhook_ordering_total', { step: 'held' })).toBeGreaterThanOrEqual(
      1,
    );
    expect(
      await f.metric('svc_webhook_ordering_total', { step: 'released' }),
    ).toBeGreaterThanOrEqual(1);
    // The ledger: the withdrawal delivered at its first attempt, the grant at its fourth.
    const withdrawn = of(userId).find((d) => d.event.type === 'consent.withdrawn')!;
    const grant = of(userId).find((d) => d.event.type === 'consent.granted')!;
    // (Each record lands just after its answer.)
    await waitFor(async () => {
      expect(await f.ledger(withdrawn.webhookId)).toMatchObject({
        deliveryStatus: 'delivered',
        attemptCount: 1,
      });
      expect(await f.ledger(grant.webhookId)).toMatchObject({
        deliveryStatus: 'delivered',
        attemptCount: 4,
      });
    });
    // The SDK posted the withdrawal's postback. (Its flag is not asserted: at this scale the
    // withdrawal's 1 h window is 3.6 s, about what the held wait and a busy machine take.)
    await waitFor(async () =>
      expect((await f.ledger(withdrawn.webhookId)).postbacks.map((p) => p.status)).toEqual([
        'processed',
      ]),
    );
  }, 90_000);

  it('an app answers its ordering, and an unknown one is refused', async () => {
    const admin = (method: string, path: string, body?: unknown) =>
      f.http(method, `/api/v1/admin${path}`, body, { authorization: `Bearer ${f.adminToken}` });
    const got = await admin('GET', `/apps/${a.appId}`);
    expect(got.body.webhookOrdering).toBe('principal');
    const bad = await admin('PATCH', `/apps/${a.appId}`, { webhookOrdering: 'global' });
    expect(bad.status).toBe(422);
    expect(JSON.stringify(bad.body)).toContain('webhookOrdering');
  });
});
