import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhookHeaders } from '../../../shared/webhooks/signer.js';
import {
  createReceiver,
  expressWebhooks,
  fastifyWebhooks,
  nextWebhooks,
  type ConsentEvent,
} from '../src/index.js';
import { json, scriptedServer } from './server.js';

/**
 * The receiver behind each adapter, on real servers: webhooks signed by the service's signer,
 * postbacks sent to a real loopback server standing in for the service's postback API.
 */
const secretKey = 'svc_sk_test_' + 'R1e2C3e4I5'.repeat(4);
let svc: Awaited<ReturnType<typeof scriptedServer>>;
beforeAll(async () => {
  svc = await scriptedServer();
  svc.answer((q, res) => json(res, 202, { dispatchId: JSON.parse(q.body).dispatchId }));
});
afterAll(async () => {
  await svc?.close();
});

let n = 0;
function webhook(type: ConsentEvent['type'], sequence: number, consentId = 'txn-1') {
  const needsPostback = type === 'consent.withdrawn';
  const body = JSON.stringify({
    id: `evt_${n}`,
    type,
    apiVersion: 'v1',
    createdAt: new Date().toISOString(),
    appId: 'app',
    environment: 'sandbox',
    data: {
      referenceId: 'SVC-REF-7K2M9Q4T',
      userId: 'u',
      consentId,
      sequence,
      recordIds: ['r'],
      purposes: { marketing: type === 'consent.granted' },
      state: { marketing: type === 'consent.granted' ? 'granted' : 'withdrawn' },
      noticeId: null,
      noticeVersion: null,
      expiresAt: null,
      ...(needsPostback
        ? {
            postback: {
              required: true,
              dueAt: new Date().toISOString(),
              url: `${svc.url}/api/v1/server/consent/action`,
            },
          }
        : {}),
    },
  });
  const dispatchId = `dsp_01KB8Z6S0XJ6Y1V5Q2E7N4M${String(n++).padStart(3, '0')}`;
  const headers = webhookHeaders({
    dispatchId,
    eventType: type,
    attempt: 1,
    timestampS: Math.floor(Date.now() / 1000),
    body,
    secretKey,
  });
  return { body, headers, dispatchId };
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const send = (url: string, w: { body: string; headers: Record<string, string> }) =>
  fetch(url, { method: 'POST', headers: w.headers, body: w.body });

describe('the receiver', () => {
  it('handles in sequence order, drops what is older, and posts the postbacks', async () => {
    const handled: string[] = [];
    const receive = createReceiver({
      secretKey,
      handler: (e) => {
        handled.push(`${e.type} ${e.data.sequence}`);
        return e.type === 'consent.withdrawn'
          ? { status: 'failed', remark: 'CRM down', risk: 'medium' }
          : undefined;
      },
    });
    svc.seen.length = 0;
    const withdrawn = webhook('consent.withdrawn', 3);
    expect((await receive(withdrawn.body, withdrawn.headers)).body.outcome).toBe('handled');
    // The grant's retry arrives after the withdrawal: dropped, the handler is not called.
    const grant = webhook('consent.granted', 2);
    expect((await receive(grant.body, grant.headers)).body.outcome).toBe('dropped');
    // The withdrawal again (a redelivery): nothing more.
    expect((await receive(withdrawn.body, withdrawn.headers)).body.outcome).toBe('duplicate');
    expect(handled).toEqual(['consent.withdrawn 3']);
    expect(svc.seen).toHaveLength(1);
    expect(svc.seen[0]!.headers['x-secret-key']).toBe(secretKey);
    expect(JSON.parse(svc.seen[0]!.body)).toMatchObject({
      dispatchId: withdrawn.dispatchId,
      referenceId: 'SVC-REF-7K2M9Q4T',
      status: 'failed',
      remark: 'CRM down',
      risk: 'medium',
    });
  });

  it('answers 401 to a bad signature and 500 when the handler throws (the service retries)', async () => {
    let fail = true;
    const receive = createReceiver({
      secretKey,
      handler: () => {
        if (fail) throw new Error('db down');
      },
    });
    const w = webhook('consent.granted', 1, 'txn-2');
    expect((await receive(w.body.replace('granted', 'withdrawn'), w.headers)).status).toBe(401);
    expect(await receive(w.body, w.headers)).toMatchObject({
      status: 500,
      body: { error: 'db down' },
    });
    fail = false;
    expect((await receive(w.body, w.headers)).body.outcome).toBe('handled');
  });

  it('runs behind Express, Fastify and a Next.js route handler', async () => {
    const seen: string[] = [];
    const opts = { secretKey, handler: (e: ConsentEvent) => void seen.push(e.type) };

    const app = express();
    app.post('/webhooks', expressWebhooks(opts));
    const exp = createServer(app);
    const expUrl = await listen(exp);

    const fst = Fastify();
    await fst.register(fastifyWebhooks(opts), { prefix: '/webhooks' });
    await fst.listen({ port: 0, host: '127.0.0.1' });
    const fstUrl = `http://127.0.0.1:${(fst.server.address() as AddressInfo).port}`;

    const next = nextWebhooks(opts);
    try {
      for (const [i, post] of [
        (w: ReturnType<typeof webhook>) => send(`${expUrl}/webhooks`, w),
        (w: ReturnType<typeof webhook>) => send(`${fstUrl}/webhooks`, w),
        (w: ReturnType<typeof webhook>) =>
          next(
            new Request('http://app.example/webhooks', {
              method: 'POST',
              headers: w.headers,
              body: w.body,
            }),
          ),
      ].entries()) {
        const ok = await post(webhook('consent.granted', 1, `txn-adapter-${i}`));
        expect(ok.status).toBe(200);
        expect(await ok.json()).toMatchObject({ received: true, outcome: 'handled' });
        const bad = webhook('consent.granted', 1, `txn-adapter-bad-${i}`);
        const refused = await post({ ...bad, body: bad.body.replace('"u"', '"v"') });
        expect(refused.status).toBe(401);
      }
      expect(seen).toEqual(['consent.granted', 'consent.granted', 'consent.granted']);
    } finally {
      await fst.close();
      await new Promise((r) => exp.close(r));
    }
  });
});
