import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createClient, createReceiver } from '../../clients/typescript/src/index.js';
import type { ConsentEvent } from '../../shared/domain/consent/events.js';
import { startPipeline, type Pipeline, type PipelineApp } from '../compliance/fixture.js';

/**
 * The overtaking of issue 46 end to end: a grant whose first attempt fails is retried after a
 * withdrawal made in between was delivered. The webhooks carry what lets the receiver tell:
 * `data.sequence` increasing with the changes, the same on every attempt of one event, and
 * `data.state` as of each change. One process with the record and ledger APIs and the relay,
 * dispatcher, compliance and timers workers, on the real Kafka and DynamoDB Local, with a
 * loopback receiver that verifies each signature with `standardwebhooks`.
 */
let f: Pipeline;
let a: PipelineApp;
/** Retries compressed 1000×: 5 ms, 300 ms, 1.8 s, 7.2 s, … */
const SCALE = 1000;

beforeAll(async () => {
  f = await startPipeline('dispatch-sequence', { DISPATCH_SWEEP_INTERVAL_MS: '200' });
  a = await f.createApp(SCALE);
});
afterAll(async () => {
  await f?.close();
});

interface Delivery {
  event: ConsentEvent;
  body: string;
  webhookId: string;
  status: number;
}

describe('event sequence over retries', () => {
  it('a grant retried after a withdrawal carries its own, smaller sequence; the receiver drops it', async () => {
    const wh = new Webhook(Buffer.from(a.secretKey), { format: 'raw' });
    const deliveries: Delivery[] = [];
    // What the SDK's receiver applies: it drops an event older than one it handled.
    const sdkApplied: ConsentEvent['data']['state'][] = [];
    const sdkOutcomes: string[] = [];
    const sdk = createReceiver({
      secretKey: a.secretKey,
      client: createClient({ baseUrl: f.p.url, secretKey: a.secretKey }),
      handler: (e) => void sdkApplied.push(e.data.state),
    });
    // The grant fails until the withdrawal has arrived, as when a receiver's 500 meets a
    // withdrawal made during the 5 s before the retry.
    f.rcv.on('/hooks', (r, res) => {
      const headers = Object.fromEntries(Object.entries(r.headers).map(([k, v]) => [k, String(v)]));
      const event = wh.verify(r.body, headers) as ConsentEvent;
      const withdrawn = deliveries.some((d) => d.event.type === 'consent.withdrawn');
      const failing = event.type === 'consent.granted' && !withdrawn;
      const answer = failing ? Promise.resolve({ status: 500, body: {} }) : sdk(r.body, headers);
      void answer.then((ans) => {
        if ('outcome' in ans.body) sdkOutcomes.push(`${event.type} ${ans.body.outcome}`);
        deliveries.push({
          event,
          body: r.body,
          webhookId: headers['webhook-id']!,
          status: ans.status,
        });
        res.writeHead(ans.status).end(JSON.stringify(ans.body));
      });
    });
    const userId = 'sequence-user';
    const http = (method: string, path: string, body?: unknown) =>
      f.http(method, path, body, f.bearer(a));
    const mine = () => deliveries.filter((d) => d.event.data.consentId === transactionId);
    const waitFor = <T>(check: () => T) => vi.waitFor(check, { timeout: 30_000, interval: 50 });

    const created = await http('POST', '/api/v1/consents', {
      userId,
      email: 'seq@mail.example',
      consents: { marketing: false },
    });
    expect(created.status).toBe(201);
    const transactionId = created.body.transactionId as string;
    expect(
      (await http('PUT', `/api/v1/consents/${userId}`, { consents: { marketing: true } })).status,
    ).toBe(200);
    // The grant's first attempt failed: now the withdrawal.
    await waitFor(() =>
      expect(mine().some((d) => d.event.type === 'consent.granted' && d.status === 500)).toBe(true),
    );
    expect((await http('DELETE', `/api/v1/consents/${userId}`)).status).toBe(200);
    await waitFor(() =>
      expect(mine().some((d) => d.event.type === 'consent.granted' && d.status === 200)).toBe(true),
    );

    const of = (type: ConsentEvent['type']) => mine().filter((d) => d.event.type === type);
    const [createdHook] = of('consent.created');
    const grants = of('consent.granted');
    const [withdrawnHook] = of('consent.withdrawn');
    expect(createdHook!.event.data).toMatchObject({
      sequence: 1,
      state: { marketing: 'withdrawn' },
    });
    expect(withdrawnHook!.event.data).toMatchObject({
      sequence: 3,
      state: { marketing: 'withdrawn' },
      purposes: { marketing: false },
    });
    // Every attempt of the grant: the same dispatch, the same body, sequence 2, state granted.
    expect(grants.length).toBeGreaterThanOrEqual(2);
    expect(new Set(grants.map((d) => d.webhookId)).size).toBe(1);
    expect(new Set(grants.map((d) => d.body)).size).toBe(1);
    expect(grants[0]!.event.data).toMatchObject({ sequence: 2, state: { marketing: 'granted' } });
    // The withdrawal overtook the grant: delivered before the grant's successful retry.
    const order = mine().map((d) => `${d.event.type} ${d.event.data.sequence} ${d.status}`);
    expect(order.indexOf('consent.withdrawn 3 200')).toBeLessThan(
      order.indexOf('consent.granted 2 200'),
    );

    // The receiver of docs/webhooks.md, Ordering: what it applies, in arrival order.
    const applied = new Map<string, number>();
    let state: ConsentEvent['data']['state'] = {};
    for (const d of mine().filter((x) => x.status === 200)) {
      const last = applied.get(d.event.data.consentId) ?? 0;
      if (d.event.data.sequence <= last) continue;
      state = d.event.data.state;
      applied.set(d.event.data.consentId, d.event.data.sequence);
    }
    expect(state).toEqual({ marketing: 'withdrawn' });
    expect(applied.get(transactionId)).toBe(3);
    // The SDK's receiver did the same: the late grant was dropped, the state is withdrawn.
    expect(sdkOutcomes).toContain('consent.granted dropped');
    expect(sdkApplied.at(-1)).toEqual({ marketing: 'withdrawn' });

    // The ledger API shows each dispatch's sequence, read from the body it sends.
    const grantLedger = await f.ledger(grants[0]!.webhookId);
    expect(grantLedger).toMatchObject({ sequence: 2, deliveryStatus: 'delivered' });
    expect(grantLedger.attemptCount).toBe(grants.length);
    expect(await f.ledger(withdrawnHook!.webhookId)).toMatchObject({ sequence: 3 });
    const stored = await http('GET', `/api/v1/consents/${userId}/receipt`);
    expect(stored.status).toBe(200);
    expect(stored.body.sequence).toBe(3);
  }, 90_000);
});
