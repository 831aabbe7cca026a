import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ConsentEvent } from '../../shared/domain/consent/events.js';
import {
  INBOX_MAX_BODY_BYTES,
  INBOX_SLOTS,
  INBOX_UNSIGNED_SLOTS,
} from '../../shared/domain/observations.js';
import { INBOX_LIMITS } from '../../services/admin/sandbox.js';
import { startPipeline, type Pipeline, type PipelineApp } from '../compliance/fixture.js';
import type { Reply } from './client.js';

/**
 * The sandbox tools on the real pipeline (docs/api.md, Sandbox tools): the built-in webhook
 * inbox as a sandbox app's webhook URL, fed by the real dispatcher; test events (signed and
 * mis-signed) landing in it with the inbox's own signature check; the postback simulator
 * moving a dispatch's flag in the ledger through the postback API's own path.
 */

let f: Pipeline;
let a: PipelineApp;
let inboxUrl: string;

const auth = () => ({ authorization: `Bearer ${f.rt.config.SVC_ADMIN_TOKEN}` });
const admin = (method: string, path: string, body?: unknown): Promise<Reply> =>
  f.http(method, `/api/v1/admin${path}`, body, auth());

interface Delivery {
  seq: number;
  receivedAt: string;
  headers: Record<string, string>;
  body: string;
  signatureValid: boolean;
}
async function inbox(appId = a.appId): Promise<Delivery[]> {
  const r = await admin('GET', `/apps/${appId}/sandbox/inbox`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.items as Delivery[];
}

/** The event a delivery carries; undefined for a body that is not one. */
function eventOf(d: Delivery): ConsentEvent | undefined {
  try {
    return JSON.parse(d.body) as ConsentEvent;
  } catch {
    return undefined;
  }
}

/** The inbox delivery of this event type for this principal, once the dispatcher made it. */
async function delivered(referenceId: string, type: ConsentEvent['type']) {
  return vi.waitFor(
    async () => {
      const d = (await inbox()).find(
        (x) => x.headers['x-svc-event'] === type && eventOf(x)?.data.referenceId === referenceId,
      );
      expect(d, `${type} for ${referenceId} in the inbox`).toBeDefined();
      return d!;
    },
    { timeout: 20_000, interval: 100 },
  );
}

async function ledger(dispatchId: string) {
  const r = await f.http('GET', `/api/v1/ledger/dispatches/${dispatchId}`, undefined, f.bearer(a));
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body as { complianceFlag: string | null; flagHistory: { flag: string }[] };
}

beforeAll(async () => {
  f = await startPipeline('admin-sandbox');
  a = await f.createApp(60);
  inboxUrl = `${f.p.url}/sandbox/inbox/${a.appId}`;
  const patched = await admin('PATCH', `/apps/${a.appId}`, { webhookUrl: inboxUrl });
  expect(patched.status, JSON.stringify(patched.body)).toBe(200);
});
afterAll(async () => {
  await f?.close();
});

describe('the webhook inbox', () => {
  it('receives a real dispatched webhook with a valid signature', async () => {
    const created = await f.http(
      'POST',
      '/api/v1/consents',
      { userId: 'inbox-user', email: 'inbox@mail.example', consents: { marketing: true } },
      f.bearer(a),
    );
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const d = await delivered(created.body.referenceId, 'consent.granted');
    expect(d.signatureValid).toBe(true);
    expect(d.headers['webhook-id']).toMatch(/^dsp_/);
    expect(d.headers['webhook-signature']).toMatch(/^v1,/);
    expect(d.headers['x-svc-dispatch-id']).toBe(d.headers['webhook-id']);
    expect(JSON.parse(d.body)).toMatchObject({ type: 'consent.granted', appId: a.appId });
    expect(Date.parse(d.receivedAt)).not.toBeNaN();
    // The dispatcher counted the inbox's 200 as a delivery.
    await vi.waitFor(
      async () => {
        const r = await f.http(
          'GET',
          `/api/v1/ledger/dispatches/${d.headers['webhook-id']}`,
          undefined,
          f.bearer(a),
        );
        expect(r.body.deliveryStatus).toBe('delivered');
      },
      { timeout: 15_000, interval: 100 },
    );
  });

  it('shows a mis-signed test event as such, and a signed one as valid', async () => {
    const bad = await admin('POST', `/apps/${a.appId}/sandbox/test-events`, {
      type: 'consent.expired',
      badSignature: true,
    });
    expect(bad.status, JSON.stringify(bad.body)).toBe(200);
    // The inbox keeps it, and refuses it as a receiver that verifies signatures does (401).
    expect(bad.body).toMatchObject({ status: 401, ok: false, signatureValid: false });
    const good = await admin('POST', `/apps/${a.appId}/sandbox/test-events`, {
      type: 'consent.expired',
    });
    expect(good.body).toMatchObject({ status: 200, ok: true, signatureValid: true });

    const items = await inbox();
    const byId = (id: string) => items.find((x) => x.headers['webhook-id'] === id);
    expect(byId(bad.body.webhookId)).toMatchObject({ signatureValid: false });
    expect(byId(good.body.webhookId)).toMatchObject({ signatureValid: true });
    expect(byId(good.body.webhookId)!.headers['x-svc-test-event']).toBe('true');
    // Newest first.
    expect(items[0]!.headers['webhook-id']).toBe(good.body.webhookId);
    expect(items.map((x) => x.seq)).toEqual([...items.map((x) => x.seq)].sort((x, y) => y - x));
  });

  it('checks signatures with the current secret key', async () => {
    const before = await admin('POST', `/apps/${a.appId}/sandbox/test-events`, {
      type: 'consent.granted',
    });
    const rotated = await admin('POST', `/apps/${a.appId}/secret/rotate`);
    expect(rotated.status).toBe(200);
    a.secretKey = rotated.body.secretKey;
    // A delivery signed with the old key, replayed now: no longer valid.
    const old = (await inbox()).find((x) => x.headers['webhook-id'] === before.body.webhookId)!;
    const replay = await fetch(inboxUrl, { method: 'POST', headers: old.headers, body: old.body });
    expect(replay.status).toBe(401);
    expect(((await replay.json()) as { code: string }).code).toBe('SVC_UNAUTHORIZED');
    const after = await admin('POST', `/apps/${a.appId}/sandbox/test-events`, {
      type: 'consent.granted',
    });
    expect(after.body.signatureValid).toBe(true);
    const kept = (await inbox()).find((x) => x.headers['webhook-id'] === after.body.webhookId);
    expect(kept).toMatchObject({ signatureValid: true });
  });

  it('keeps any content type, bounds the body, and only for sandbox apps', async () => {
    const text = await fetch(inboxUrl, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: 'hello',
    });
    expect(text.status).toBe(401);
    expect((await inbox())[0]).toMatchObject({ body: 'hello', signatureValid: false });

    for (const type of ['application/json', 'application/octet-stream']) {
      const big = await fetch(inboxUrl, {
        method: 'POST',
        headers: { 'content-type': type },
        body: JSON.stringify({ pad: 'x'.repeat(INBOX_MAX_BODY_BYTES) }),
      });
      expect(big.status, type).toBe(413);
    }

    const live = await admin('POST', '/apps', {
      name: 'Live shop',
      environment: 'live',
      webhookUrl: 'https://shop.example/hooks',
      allowedOrigins: ['https://shop.example'],
      contactEmail: 'dpo@shop.example',
    });
    expect(live.status).toBe(201);
    const liveId = live.body.app.appId as string;
    for (const id of [liveId, 'app_00000000000000000000', 'nope']) {
      const r = await fetch(`${f.p.url}/sandbox/inbox/${id}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      });
      expect(r.status, id).toBe(404);
    }
    expect((await admin('GET', `/apps/${liveId}/sandbox/inbox`)).status).toBe(409);
    const test = await admin('POST', `/apps/${liveId}/sandbox/test-events`, {
      type: 'consent.granted',
    });
    expect(test.status).toBe(409);
    expect((await admin('GET', `/apps/${a.appId}/sandbox/inbox`, undefined)).status).toBe(200);
    const anon = await f.http('GET', `/api/v1/admin/apps/${a.appId}/sandbox/inbox`);
    expect(anon.status).toBe(401);
  });

  it(`keeps the newest ${INBOX_UNSIGNED_SLOTS} unsigned deliveries, never pushing signed ones out`, async () => {
    const other = await f.createApp(60);
    const url = `${f.p.url}/sandbox/inbox/${other.appId}`;
    expect((await admin('PATCH', `/apps/${other.appId}`, { webhookUrl: url })).status).toBe(200);
    const signed = await admin('POST', `/apps/${other.appId}/sandbox/test-events`, {
      type: 'consent.granted',
    });
    expect(signed.body).toMatchObject({ status: 200, signatureValid: true });
    for (let i = 0; i < INBOX_UNSIGNED_SLOTS + 5; i++) {
      // Each from an address of its own (a proxy on loopback names it), so only the app's
      // budget is spent.
      const r = await fetch(url, {
        method: 'POST',
        headers: { 'x-forwarded-for': `198.51.100.${i + 1}` },
        body: String(i),
      });
      // Unsigned: kept, and refused as a verifying receiver refuses it.
      expect(r.status).toBe(401);
    }
    const items = await inbox(other.appId);
    const unsigned = items.filter((x) => !x.signatureValid);
    expect(unsigned).toHaveLength(INBOX_UNSIGNED_SLOTS);
    expect(unsigned[0]!.body).toBe(String(INBOX_UNSIGNED_SLOTS + 4));
    expect(unsigned.at(-1)!.body).toBe('5');
    expect(items.filter((x) => x.signatureValid).map((x) => x.headers['webhook-id'])).toEqual([
      signed.body.webhookId,
    ]);
    // Bounded in the store, not only in the listing.
    const stored = await f.rt.dynamo.doc.send(
      new QueryCommand({
        TableName: f.rt.tables.entities,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :slot)',
        ExpressionAttributeValues: { ':pk': `APP#${other.appId}#INBOX`, ':slot': 'SLOT#' },
        Select: 'COUNT',
        ConsistentRead: true,
      }),
    );
    expect(stored.Count).toBe(INBOX_UNSIGNED_SLOTS + 1);
    expect(INBOX_SLOTS).toBe(100);
  });

  it('refuses a body over 16 KiB, and holds each address and each app to budgets of their own (429)', async () => {
    const other = await f.createApp(60);
    const url = `${f.p.url}/sandbox/inbox/${other.appId}`;
    const post = (from: string, body = '{}') =>
      fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-forwarded-for': from },
        body,
      });
    expect(INBOX_MAX_BODY_BYTES).toBe(16 * 1024);
    const big = await post('198.51.100.200', JSON.stringify({ pad: 'x'.repeat(17 * 1024) }));
    expect(big.status).toBe(413);

    // One address, all at once (a busy machine may take seconds to read them all, so five bursts'
    // worth): beyond its burst, 429 with Retry-After (the API allows 1,000/s).
    const one = await Promise.all(
      Array.from({ length: INBOX_LIMITS.perAddress.burst * 5 }, () => post('203.0.113.77')),
    );
    const refused = one.filter((r) => r.status === 429);
    expect(refused.length).toBeGreaterThan(0);
    expect(Number(refused[0]!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(((await refused[0]!.json()) as { code: string }).code).toBe('SVC_RATE_LIMITED');

    // Many addresses, one app, all at once: the app's budget runs out too.
    const many = await Promise.all(
      Array.from({ length: INBOX_LIMITS.perApp.burst * 4 }, (_, i) => post(`192.0.2.${i + 1}`)),
    );
    expect(many.map((r) => r.status)).toContain(429);
    // Another app is not held to this one's budget.
    const third = await f.createApp(60);
    const fresh = await fetch(`${f.p.url}/sandbox/inbox/${third.appId}`, {
      method: 'POST',
      headers: { 'x-forwarded-for': '192.0.2.250' },
      body: 'x',
    });
    expect(fresh.status).toBe(401);
  });
});

describe('the postback simulator', () => {
  it('answers a dispatch and changes its flag in the ledger', async () => {
    const created = await f.http(
      'POST',
      '/api/v1/consents',
      { userId: 'simulated-user', email: 'sim@mail.example', consents: { marketing: true } },
      f.bearer(a),
    );
    expect(created.status).toBe(201);
    const del = await f.http('DELETE', '/api/v1/consents/simulated-user', undefined, f.bearer(a));
    expect(del.status).toBe(200);
    const d = await delivered(created.body.referenceId, 'consent.withdrawn');
    const dispatchId = d.headers['x-svc-dispatch-id']!;
    expect((await ledger(dispatchId)).complianceFlag).toBeNull();

    const high = await admin('POST', `/apps/${a.appId}/sandbox/postbacks`, {
      dispatchId,
      status: 'processed',
      risk: 'high',
    });
    expect(high.status, JSON.stringify(high.body)).toBe(202);
    expect(high.body.postback).toMatchObject({
      dispatchId,
      status: 'processed',
      risk: 'high',
      postbackId: expect.stringMatching(/^pb_/),
    });
    if (high.body.applied) expect(high.body.flag).toBe('breach');
    await vi.waitFor(async () => expect((await ledger(dispatchId)).complianceFlag).toBe('breach'), {
      timeout: 15_000,
      interval: 100,
    });

    const none = await admin('POST', `/apps/${a.appId}/sandbox/postbacks`, {
      dispatchId,
      status: 'processed',
      risk: 'none',
    });
    expect(none.status).toBe(202);
    await vi.waitFor(
      async () => {
        const l = await ledger(dispatchId);
        expect(l.complianceFlag).toBe('ok');
        expect(l.flagHistory.map((h) => h.flag)).toEqual(['breach', 'ok']);
      },
      { timeout: 15_000, interval: 100 },
    );
  });

  it('refuses what the postback API refuses', async () => {
    const created = await f.http(
      'POST',
      '/api/v1/consents',
      { userId: 'granted-only', email: 'g@mail.example', consents: { marketing: true } },
      f.bearer(a),
    );
    const granted = await delivered(created.body.referenceId, 'consent.granted');
    const post = (body: Record<string, unknown>, appId = a.appId) =>
      admin('POST', `/apps/${appId}/sandbox/postbacks`, {
        status: 'processed',
        risk: 'none',
        ...body,
      });
    // An event that needs no postback.
    expect((await post({ dispatchId: granted.headers['x-svc-dispatch-id'] })).status).toBe(409);
    // An unknown dispatch, and another app's.
    expect((await post({ dispatchId: 'dsp_01JD0000000000000000000000' })).status).toBe(404);
    const other = await f.createApp(60);
    const foreign = await post({ dispatchId: granted.headers['x-svc-dispatch-id'] }, other.appId);
    expect(foreign.status).toBe(404);
    // A failed status without a remark.
    const failed = await post({
      dispatchId: granted.headers['x-svc-dispatch-id'],
      status: 'failed',
    });
    expect(failed.status).toBe(422);
    expect(failed.body.errors).toEqual([{ path: '/remark', message: expect.any(String) }]);
    expect((await post({ dispatchId: 'nope' })).status).toBe(422);
  });
});
