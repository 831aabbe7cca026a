import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminService } from '../../services/admin/index.js';
import { consentsService } from '../../services/consents/index.js';
import { publicApiService } from '../../services/public-api/index.js';
import { STATUS_CACHE_CONTROL } from '../../services/widget/status-route.js';
import { widgetService } from '../../services/widget/index.js';
import {
  decisionStatus,
  mintStatusToken,
  openStatusToken,
} from '../../shared/domain/consent/decision-status.js';
import { expireTransaction } from '../../shared/domain/consent/expiry.js';
import type { RunningProcess } from '../../bin/process.js';
import { noticeBody } from '../consent/fixture.js';
import { testProcess } from '../helpers/stack.js';

/**
 * `GET /api/v1/widget/status/{token}` (docs/widget-status.md): the status token a capture
 * returns says whether its decision still stands, after a change through the record API, the
 * public API, erasure or expiry; nothing else.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- assertions read response fields
type Body = any;

const ORIGIN = 'https://shop.example';
const admin = `status-admin-${randomBytes(12).toString('hex')}`;
let p: RunningProcess;
interface TestApp {
  appId: string;
  siteKey: string;
  secretKey: string;
  apiKey: string;
}
let a: TestApp;
let b: TestApp;

async function call(
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: unknown,
) {
  const r = await fetch(`${p.url}${path}`, {
    method,
    headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await r.text();
  expect(r.status, text).toBeLessThan(500);
  return {
    status: r.status,
    headers: r.headers,
    text,
    body: (text ? JSON.parse(text) : {}) as Body,
  };
}

async function createApp(): Promise<TestApp> {
  const auth = { authorization: `Bearer ${admin}` };
  const created = await call('POST', '/api/v1/admin/apps', auth, {
    name: 'Shop',
    environment: 'sandbox',
    webhookUrl: 'http://127.0.0.1:9/hook',
    allowedOrigins: [ORIGIN],
    contactEmail: 'dpo@shop.example',
  });
  expect(created.status).toBe(201);
  const appId = created.body.app.appId as string;
  const n = await call(
    'POST',
    `/api/v1/admin/apps/${appId}/notices`,
    auth,
    noticeBody('newsletter_signup', [{ name: 'essential', required: true }, { name: 'marketing' }]),
  );
  expect(n.status).toBe(201);
  const key = await call('POST', `/api/v1/admin/apps/${appId}/api-keys`, auth, {
    name: 'server',
    scopes: ['consents:read', 'consents:write'],
  });
  expect(key.status).toBe(201);
  return {
    appId,
    siteKey: created.body.siteKey,
    secretKey: created.body.secretKey,
    apiKey: key.body.key,
  };
}

beforeAll(async () => {
  p = await testProcess(
    'widget-status',
    [adminService, consentsService, publicApiService, widgetService],
    [],
    { SVC_ADMIN_TOKEN: admin },
  );
  a = await createApp();
  b = await createApp();
});
afterAll(async () => {
  await p?.close();
});

const site = (app: TestApp) => ({ 'x-site-key': app.siteKey, origin: ORIGIN });

async function capture(app: TestApp = a) {
  const r = await call('POST', '/api/v1/widget/capture', site(app), {
    siteKey: app.siteKey,
    processId: 'newsletter_signup',
    mode: 'silent',
    pageUrl: 'https://shop.example/signup',
  });
  expect(r.status).toBe(201);
  return r.body as {
    consentId: string;
    referenceId: string;
    expiresAt: string;
    statusToken: string;
  };
}

const status = (token: string, app: TestApp = a, headers: Record<string, string> = {}) =>
  call('GET', `/api/v1/widget/status/${token}`, { ...site(app), ...headers });

describe('GET /api/v1/widget/status/{token}', () => {
  it('a capture returns a status token that reveals nothing and answers live, revalidated', async () => {
    const c = await capture();
    expect(c.statusToken).toMatch(/^svc_st_[A-Za-z0-9_-]{59}$/);
    // Opaque: neither the transaction id nor the referenceId can be read in it.
    const hex = Buffer.from(c.statusToken.slice(7), 'base64url').toString('hex');
    expect(hex).not.toContain(c.consentId.replace(/-/g, ''));
    expect(c.statusToken).not.toContain(c.referenceId);
    expect(openStatusToken(p.rt.config, a.appId, c.statusToken)).toBe(c.consentId);

    const r = await status(c.statusToken);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ live: true });
    expect(r.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    expect(r.headers.get('cache-control')).toBe(STATUS_CACHE_CONTROL);
    expect(r.headers.get('vary')).toMatch(/Origin/);
    expect(r.headers.get('vary')).toMatch(/X-Site-Key/i);
    // Nothing about the principal: no id, no purpose, no time.
    for (const s of [c.referenceId, c.consentId, 'essential', 'marketing', c.expiresAt])
      expect(r.text).not.toContain(s);
    // Unchanged: a 304 for the ETag it had.
    const etag = r.headers.get('etag')!;
    expect(etag).toBe('"live"');
    const again = await status(c.statusToken, a, { 'if-none-match': etag });
    expect(again.status).toBe(304);
    expect(again.text).toBe('');
  });

  it('a preflight for the status path is answered like the other widget routes', async () => {
    const r = await fetch(`${p.url}/api/v1/widget/status/svc_st_x`, {
      method: 'OPTIONS',
      headers: {
        origin: ORIGIN,
        'access-control-request-method': 'GET',
        'access-control-request-headers': 'x-site-key',
      },
    });
    expect(r.status).toBe(204);
    expect(r.headers.get('access-control-allow-origin')).toBe(ORIGIN);
  });

  it('not live after a purpose is withdrawn through the record API', async () => {
    const c = await capture();
    const bearer = { authorization: `Bearer ${a.apiKey}` };
    // Linking the capture to a user with marketing off withdraws marketing.
    const linked = await call('POST', '/api/v1/consents', bearer, {
      userId: `user-${randomBytes(4).toString('hex')}`,
      email: 'u@example.com',
      consents: { marketing: false },
      consentId: c.consentId,
    });
    expect(linked.status, linked.text).toBe(201);
    const live = await status(c.statusToken);
    expect(live.body).toEqual({ live: false, reason: 'withdrawn' });
    // The old ETag no longer matches: the new answer, not a 304.
    const revalidated = await status(c.statusToken, a, { 'if-none-match': '"live"' });
    expect(revalidated.status).toBe(200);
    expect(revalidated.headers.get('etag')).toBe('"withdrawn"');
  });

  it('not live after every purpose is withdrawn through the record API (DELETE)', async () => {
    const c = await capture();
    const bearer = { authorization: `Bearer ${a.apiKey}` };
    const userId = `user-${randomBytes(4).toString('hex')}`;
    const linked = await call('POST', '/api/v1/consents', bearer, {
      userId,
      email: 'v@example.com',
      consents: {},
      consentId: c.consentId,
    });
    expect(linked.status, linked.text).toBe(201);
    expect((await status(c.statusToken)).body).toEqual({ live: true });
    const withdrawn = await call('DELETE', `/api/v1/consents/${userId}`, bearer);
    expect(withdrawn.status, withdrawn.text).toBe(200);
    expect((await status(c.statusToken)).body).toEqual({ live: false, reason: 'withdrawn' });
  });

  it('not live after a withdrawal or an erasure through the public API', async () => {
    const secret = { 'x-secret-key': a.secretKey };
    const revoked = await capture();
    const r = await call(
      'POST',
      `/api/public/consents/my-transactions/${revoked.consentId}/revoke`,
      secret,
      {},
    );
    expect(r.body.status).toBe('revoked');
    expect((await status(revoked.statusToken)).body).toEqual({ live: false, reason: 'withdrawn' });

    const erased = await capture();
    const e = await call(
      'POST',
      `/api/public/consents/my-transactions/${erased.consentId}/erase`,
      secret,
      { referenceId: erased.referenceId },
    );
    expect(e.body.status).toBe('erased');
    expect((await status(erased.statusToken)).body).toEqual({ live: false, reason: 'erased' });
  });

  it('not live once expired: past its window, and once the expiry has run', async () => {
    const c = await capture();
    const end = Date.parse(c.expiresAt);
    // The window's end counts before the timer has run (the clock passed in).
    expect(await decisionStatus(p.rt.consents, a.appId, c.consentId, end - 1)).toEqual({
      live: true,
    });
    expect(await decisionStatus(p.rt.consents, a.appId, c.consentId, end)).toEqual({
      live: false,
      reason: 'expired',
    });
    // What the timers worker runs at the end of the window.
    await expireTransaction(p.rt, a.appId, c.consentId, new Date(end + 1));
    expect((await status(c.statusToken)).body).toEqual({ live: false, reason: 'expired' });
  });

  it('a forged, garbled or other app’s token is a 404; no site key is a 401', async () => {
    const c = await capture();
    const mine = await capture(b);
    // Another app's token, with this app's site key: the app is bound into the token.
    expect((await status(mine.statusToken)).status).toBe(404);
    expect((await status(mine.statusToken, b)).body).toEqual({ live: true });
    // One bit changed, anywhere.
    const raw = Buffer.from(c.statusToken.slice(7), 'base64url');
    for (const at of [0, 14, raw.length - 1]) {
      const bent = Buffer.from(raw);
      bent[at]! ^= 1;
      const r = await status(`svc_st_${bent.toString('base64url')}`);
      expect(r.status).toBe(404);
      expect(r.headers.get('content-type')).toMatch(/problem\+json/);
    }
    // A token minted for a transaction that does not exist.
    const ghost = mintStatusToken(p.rt.config, a.appId, '0f0e0d0c-0b0a-4908-8706-050403020100');
    expect((await status(ghost)).status).toBe(404);
    for (const junk of [
      'x',
      'svc_st_',
      `svc_st_${'A'.repeat(59)}`,
      '%F0%9F%98%80',
      'a'.repeat(500),
    ])
      expect((await status(junk)).status, junk).toBe(404);
    const anonymous = await call('GET', `/api/v1/widget/status/${c.statusToken}`, {
      origin: ORIGIN,
    });
    expect(anonymous.status).toBe(401);
    const elsewhere = await call('GET', `/api/v1/widget/status/${c.statusToken}`, {
      'x-site-key': a.siteKey,
      origin: 'https://evil.example',
    });
    expect(elsewhere.status).toBe(403);
  });
});
