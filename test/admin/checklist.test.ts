import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { widgetService } from '../../services/widget/index.js';
import type { ConsentEvent } from '../../shared/domain/consent/events.js';
import type { RunningProcess } from '../../bin/process.js';
import { ENCRYPTION_KEY, startPipeline, type Pipeline } from '../compliance/fixture.js';
import { testProcess } from '../helpers/stack.js';
import { client, notice, type Reply } from './client.js';

/**
 * The compliance checklist and go-live end to end (docs/api.md, Compliance checklist and
 * go-live), on the real pipeline: a fresh sandbox app fails its critical items; each is then
 * fixed for real — a notice, the widget's config call from an allowlisted origin (a widget
 * service on the same tables), test events to a loopback receiver that verifies signatures with
 * `standardwebhooks` and refuses bad ones, real consent.withdrawn, data.deleted and
 * consent.expired dispatches answered by postbacks, a ledger key, an attestation — and the
 * items pass as they are. Go-live is refused naming what still fails, then creates the live
 * twin, once.
 */

const SCALE = 60;
const ORIGIN = 'https://shop.example';
let f: Pipeline;
let widget: RunningProcess;
let appId: string;
let secretKey: string;
let siteKey: string;
let ledgerKey: string;
/** Signature checks the receiver made: true verified, false refused. */
const verdicts: boolean[] = [];

const auth = () => ({ authorization: `Bearer ${f.rt.config.SVC_ADMIN_TOKEN}` });
const admin = (method: string, path: string, body?: unknown): Promise<Reply> =>
  f.http(method, `/api/v1/admin${path}`, body, auth());

interface Item {
  id: string;
  severity: string;
  status: string;
  evidence: string;
}
async function checklist() {
  const r = await admin('GET', `/apps/${appId}/checklist`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  const items = (r.body.areas as { items: Item[] }[]).flatMap((a) => a.items);
  const byId = Object.fromEntries(items.map((i) => [i.id, i]));
  return { body: r.body, items, byId };
}
const statusOf = async (id: string) => (await checklist()).byId[id]!.status;

/** The first webhook of this type for this principal, with its dispatch id. */
async function webhook(referenceId: string, type: ConsentEvent['type']) {
  return vi.waitFor(
    () => {
      const hit = f.rcv.received
        .filter((r) => r.path === '/hooks')
        .map((r) => ({
          dispatchId: String(r.headers['x-svc-dispatch-id']),
          event: JSON.parse(r.body) as ConsentEvent,
        }))
        .find((w) => w.event.data.referenceId === referenceId && w.event.type === type);
      expect(hit, `${type} for ${referenceId}`).toBeDefined();
      return hit!;
    },
    // A clock moved months ahead has the expiry sweep walk its buckets up to it: seconds under load.
    { timeout: 40_000, interval: 50 },
  );
}

async function user(userId: string) {
  const r = await f.http(
    'POST',
    '/api/v1/consents',
    { userId, email: `${userId}@mail.example`, consents: { marketing: true } },
    { authorization: `Bearer ${ledgerKey}` },
  );
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body as {
    referenceId: string;
    transactionId: string;
    createdAt: string;
    expiresAt: string;
  };
}

beforeAll(async () => {
  f = await startPipeline('admin-checklist');
  // The widget's config call is what records the verification: a widget service on the same
  // tables and topics.
  widget = await testProcess('admin-checklist-widget', [widgetService], [], {
    TABLE_PREFIX: f.rt.config.TABLE_PREFIX,
    TOPIC_PREFIX: f.rt.config.TOPIC_PREFIX,
    SVC_ENCRYPTION_KEY: ENCRYPTION_KEY,
  });
  const created = await admin('POST', '/apps', {
    name: 'Checklist shop',
    environment: 'sandbox',
    webhookUrl: f.rcv.url('/hooks'),
    allowedOrigins: [ORIGIN],
    contactEmail: 'dpo@shop.example',
    slaTimeScale: SCALE,
  });
  expect(created.status).toBe(201);
  appId = created.body.app.appId;
  secretKey = created.body.secretKey;
  siteKey = created.body.siteKey;
  // The app's server: verifies every webhook as docs/webhooks.md shows, refuses a bad one.
  const wh = new Webhook(Buffer.from(secretKey), { format: 'raw' });
  f.rcv.on('/hooks', (r, res) => {
    try {
      wh.verify(r.body, r.headers as Record<string, string>);
      verdicts.push(true);
      res.statusCode = 204;
      res.end();
    } catch {
      verdicts.push(false);
      res.statusCode = 401;
      res.end('{"error":"bad signature"}');
    }
  });
});
afterAll(async () => {
  await widget?.close();
  await f?.close();
});

describe('the checklist of a fresh sandbox app', () => {
  it('lists the seven areas in order and fails its critical items', async () => {
    const { body, items, byId } = await checklist();
    expect(body).toMatchObject({ appId, environment: 'sandbox', canGoLive: false });
    expect(body.areas.map((a: { area: string }) => a.area)).toEqual([
      'consent_collection',
      'webhook_delivery',
      'postback_sla',
      'processing_controls',
      'principal_rights',
      'key_management',
      'audit_trail',
    ]);
    for (const i of items) {
      expect(['critical', 'important', 'recommended']).toContain(i.severity);
      expect(['pass', 'fail', 'attested', 'pending']).toContain(i.status);
    }
    for (const id of [
      'notice_published',
      'widget_verified',
      'webhook_signed_test',
      'webhook_rejects_bad_signature',
      'postback_consent_withdrawn',
      'postback_consent_expired',
      'postback_data_deleted',
      'ledger_api_key',
      'deliveries_recorded',
    ])
      expect(byId[id], id).toMatchObject({ status: 'fail' });
    expect(byId.processing_stops_on_withdrawal).toMatchObject({
      severity: 'critical',
      status: 'pending',
    });
    // Observed from the app itself: young key, contact set.
    expect(byId.secret_key_age!.status).toBe('pass');
    expect(byId.contact_email!.status).toBe('pass');
  });

  it('refuses to go live, naming every failing critical item', async () => {
    const r = await admin('POST', `/apps/${appId}/go-live`, {
      webhookUrl: 'https://shop.example/hooks',
    });
    expect(r.status).toBe(409);
    expect(r.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect(r.body.code).toBe('SVC_CHECKLIST_INCOMPLETE');
    expect(r.body.errors.map((e: { path: string }) => e.path)).toEqual([
      '/checklist/notice_published',
      '/checklist/widget_verified',
      '/checklist/webhook_signed_test',
      '/checklist/webhook_rejects_bad_signature',
      '/checklist/postback_consent_withdrawn',
      '/checklist/postback_consent_expired',
      '/checklist/postback_data_deleted',
      '/checklist/processing_stops_on_withdrawal',
    ]);
  });
});

describe('fixing the items for real', () => {
  it('a notice with itemised data and purposes', async () => {
    const n = await admin('POST', `/apps/${appId}/notices`, notice());
    expect(n.status, JSON.stringify(n.body)).toBe(201);
    const item = (await checklist()).byId.notice_published!;
    expect(item.status).toBe('pass');
    expect(item.evidence).toContain(n.body.noticeId);
  });

  it('the widget seen on an allowlisted origin', async () => {
    const w = await client(widget.url)(
      'GET',
      '/api/v1/widget/config/newsletter_signup',
      undefined,
      {
        'x-site-key': siteKey,
        origin: ORIGIN,
      },
    );
    expect(w.status, JSON.stringify(w.body)).toBe(200);
    const item = (await checklist()).byId.widget_verified!;
    expect(item.status).toBe('pass');
    expect(item.evidence).toContain(ORIGIN);
  });

  it('a signed test event answered 2xx by an endpoint that verifies it', async () => {
    const r = await admin('POST', `/apps/${appId}/sandbox/test-events`, {
      type: 'consent.withdrawn',
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ status: 204, ok: true, signatureValid: true });
    expect(r.body.durationMs).toBeGreaterThanOrEqual(0);
    expect(verdicts).toEqual([true]);
    const hook = f.rcv.at('/hooks').at(-1)!;
    expect(hook.headers['x-svc-event']).toBe('consent.withdrawn');
    expect(hook.headers['webhook-id']).toBe(r.body.webhookId);
    expect(JSON.parse(hook.body)).toMatchObject({ type: 'consent.withdrawn', appId });
    expect(await statusOf('webhook_signed_test')).toBe('pass');
    expect(await statusOf('webhook_rejects_bad_signature')).toBe('fail');
  });

  it('a mis-signed test event refused by that endpoint', async () => {
    const r = await admin('POST', `/apps/${appId}/sandbox/test-events`, {
      type: 'data.deleted',
      badSignature: true,
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ status: 401, ok: false, signatureValid: false });
    expect(verdicts).toEqual([true, false]);
    expect(await statusOf('webhook_rejects_bad_signature')).toBe('pass');
    // Each kind keeps its own last outcome: the signed item still passes.
    expect(await statusOf('webhook_signed_test')).toBe('pass');
  });

  it('a ledger key', async () => {
    const k = await admin('POST', `/apps/${appId}/api-keys`, {
      name: 'audit',
      scopes: ['consents:read', 'consents:write', 'ledger:read'],
    });
    expect(k.status).toBe(201);
    ledgerKey = k.body.key;
    const item = (await checklist()).byId.ledger_api_key!;
    expect(item).toMatchObject({ status: 'pass' });
    expect(item.evidence).toContain(k.body.id);
  });

  it('consent.withdrawn answered in time through the postback API', async () => {
    const u = await user('withdrawing-user');
    const del = await f.http('DELETE', '/api/v1/consents/withdrawing-user', undefined, {
      authorization: `Bearer ${ledgerKey}`,
    });
    expect(del.status).toBe(200);
    const hook = await webhook(u.referenceId, 'consent.withdrawn');
    // Dispatched and waiting for its postback within the window: pending, not failed.
    expect(await statusOf('postback_consent_withdrawn')).toBe('pending');
    const pb = await f.http(
      'POST',
      '/api/v1/server/consent/action',
      {
        dispatchId: hook.dispatchId,
        referenceId: u.referenceId,
        status: 'processed',
        completedAt: new Date().toISOString(),
        risk: 'none',
        tags: [],
        actions: [{ type: 'stop_processing', result: 'done' }],
      },
      { 'x-secret-key': secretKey },
    );
    expect(pb.status, JSON.stringify(pb.body)).toBe(202);
    await vi.waitFor(
      async () => expect(await statusOf('postback_consent_withdrawn')).toBe('pass'),
      {
        timeout: 15_000,
        interval: 100,
      },
    );
    expect((await checklist()).byId.postback_consent_withdrawn!.evidence).toContain(
      hook.dispatchId,
    );
    // The deliveries were recorded in the ledger too.
    await vi.waitFor(async () => expect(await statusOf('deliveries_recorded')).toBe('pass'), {
      timeout: 15_000,
      interval: 100,
    });
  });

  it('data.deleted confirmed in time through the postback simulator', async () => {
    const u = await user('erased-user');
    const erase = await f.http(
      'POST',
      `/api/public/consents/my-transactions/${u.transactionId}/erase`,
      { referenceId: u.referenceId },
      { 'x-secret-key': secretKey },
    );
    expect(erase.status, JSON.stringify(erase.body)).toBe(200);
    const hook = await webhook(u.referenceId, 'data.deleted');
    const pb = await admin('POST', `/apps/${appId}/sandbox/postbacks`, {
      dispatchId: hook.dispatchId,
      status: 'deleted',
      risk: 'none',
    });
    expect(pb.status, JSON.stringify(pb.body)).toBe(202);
    await vi.waitFor(async () => expect(await statusOf('postback_data_deleted')).toBe('pass'), {
      timeout: 15_000,
      interval: 100,
    });
  });

  it('refuses to go live while the rest fails, naming only what is left', async () => {
    const r = await admin('POST', `/apps/${appId}/go-live`, {
      webhookUrl: 'https://shop.example/hooks',
    });
    expect(r.status).toBe(409);
    expect(r.body.code).toBe('SVC_CHECKLIST_INCOMPLETE');
    expect(r.body.errors.map((e: { path: string }) => e.path)).toEqual([
      '/checklist/postback_consent_expired',
      '/checklist/processing_stops_on_withdrawal',
    ]);
    expect(r.body.errors[1].message).toMatch(/^pending: /);
  });

  it('consent.expired answered in time (the workers’ clock moved to the expiry)', async () => {
    // 365 days in about 2.4 h: the workers' clock is moved to the reminder, then to the expiry
    // (the reminder writes the expiry's timer), as the timers' own tests do.
    const scaled = await admin('PATCH', `/apps/${appId}`, { slaTimeScale: 3600 });
    expect(scaled.status).toBe(200);
    const u = await user('expiring-user');
    // expiresAt is the uncompressed end; the timers fire at its compressed instants.
    const start = Date.parse(u.createdAt);
    const end = Date.parse(u.expiresAt);
    const compressed = (ms: number) => Math.ceil(start + (ms - start) / 3600);
    const expireAt = compressed(end);
    const moveTo = (ms: number) => f.clock.advance(Math.max(0, ms + 500 - f.clock.now()));
    moveTo(compressed(end - 30 * 86_400_000));
    await webhook(u.referenceId, 'consent.expiry.reminder');
    moveTo(expireAt);
    const hook = await webhook(u.referenceId, 'consent.expired');
    const pb = await admin('POST', `/apps/${appId}/sandbox/postbacks`, {
      dispatchId: hook.dispatchId,
      status: 'processed',
      risk: 'low',
    });
    expect(pb.status, JSON.stringify(pb.body)).toBe(202);
    await vi.waitFor(async () => expect(await statusOf('postback_consent_expired')).toBe('pass'), {
      timeout: 15_000,
      interval: 100,
    });
  }, 90_000);

  it('attests what only a person can confirm; observed items cannot be attested', async () => {
    const observed = await admin('POST', `/apps/${appId}/checklist/notice_published/attest`, {
      by: 'dpo@shop.example',
      note: 'trust me',
    });
    expect(observed.status).toBe(409);
    expect(observed.body.code).toBe('SVC_CONFLICT');
    const unknown = await admin('POST', `/apps/${appId}/checklist/no_such_item/attest`, {
      by: 'dpo@shop.example',
      note: 'x',
    });
    expect(unknown.status).toBe(404);
    const invalid = await admin('POST', `/apps/${appId}/checklist/grievance_contact/attest`, {
      by: '',
    });
    expect(invalid.status).toBe(422);

    const r = await admin(
      'POST',
      `/apps/${appId}/checklist/processing_stops_on_withdrawal/attest`,
      {
        by: 'dpo@shop.example',
        note: 'CRM and mailer stop on consent.withdrawn',
      },
    );
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body.attestation).toMatchObject({ by: 'dpo@shop.example' });
    expect(r.body.item).toMatchObject({ id: 'processing_stops_on_withdrawal', status: 'attested' });
    const item = (await checklist()).byId.processing_stops_on_withdrawal!;
    expect(item.status).toBe('attested');
    expect(item.evidence).toContain('dpo@shop.example');
    expect(item.evidence).toContain('CRM and mailer stop on consent.withdrawn');
    expect(item.evidence).toContain(r.body.attestation.at);
  });
});

describe('going live', () => {
  it('the checklist says it can go live now', async () => {
    const { body, items } = await checklist();
    expect(
      items.filter((i) => i.severity === 'critical' && !['pass', 'attested'].includes(i.status)),
    ).toEqual([]);
    expect(body.canGoLive).toBe(true);
  });

  it('needs an https webhook URL', async () => {
    const r = await admin('POST', `/apps/${appId}/go-live`, {
      webhookUrl: 'http://shop.example/h',
    });
    expect(r.status).toBe(422);
    expect(r.body.errors[0].path).toBe('/webhookUrl');
  });

  it('creates the live twin with its own keys, once', async () => {
    const sandbox = (await admin('GET', `/apps/${appId}`)).body;
    const r = await admin('POST', `/apps/${appId}/go-live`, {
      webhookUrl: 'https://shop.example/hooks',
      by: 'cto@shop.example',
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    const live = r.body.app;
    expect(live).toMatchObject({
      environment: 'live',
      webhookUrl: 'https://shop.example/hooks',
      allowedOrigins: [ORIGIN],
      contactEmail: 'dpo@shop.example',
      slaTimeScale: 1,
      goLiveBy: 'cto@shop.example',
      sandboxAppId: appId,
    });
    expect(live.appId).not.toBe(appId);
    expect(live.siteKey).not.toBe(sandbox.siteKey);
    expect(r.body.siteKey).toBe(live.siteKey);
    expect(r.body.secretKey).toMatch(/^svc_sk_[0-9A-Za-z]{40}$/);
    expect(r.body.secretKey).not.toBe(secretKey);
    expect(live.goLiveAt).toEqual(expect.any(String));
    expect(r.body.noticesCopied).toBe(1);

    const keys = await admin('GET', `/apps/${live.appId}/api-keys`);
    expect(keys.body.items).toEqual([]);
    const notices = await admin('GET', `/apps/${live.appId}/notices`);
    expect(notices.body.items.map((n: { triggerKey: string }) => n.triggerKey)).toEqual([
      'newsletter_signup',
    ]);
    const after = (await admin('GET', `/apps/${appId}`)).body;
    expect(after).toMatchObject({
      goLiveAt: live.goLiveAt,
      goLiveBy: 'cto@shop.example',
      liveAppId: live.appId,
    });
    // The live secret key is the live app's: a postback with it is authenticated (404: no
    // such dispatch, not 401).
    const pb = await f.http(
      'POST',
      '/api/v1/server/consent/action',
      {
        dispatchId: 'dsp_01JD0000000000000000000000',
        referenceId: 'SVC-REF-00000000',
        status: 'processed',
        completedAt: new Date().toISOString(),
        risk: 'none',
      },
      { 'x-secret-key': r.body.secretKey },
    );
    expect(pb.status).toBe(404);

    const again = await admin('POST', `/apps/${appId}/go-live`, {
      webhookUrl: 'https://shop.example/hooks',
    });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('SVC_CONFLICT');
    const fromLive = await admin('POST', `/apps/${live.appId}/go-live`, {
      webhookUrl: 'https://shop.example/hooks',
    });
    expect(fromLive.status).toBe(409);
    expect((await checklist()).body.canGoLive).toBe(false);

    // Sandbox tools stay in the sandbox.
    const test = await admin('POST', `/apps/${live.appId}/sandbox/test-events`, {
      type: 'consent.granted',
    });
    expect(test.status).toBe(409);
  });
});
