import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { RequestHandler } from 'express';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { adminService } from '../../services/admin/index.js';
import { captureConsent } from '../../shared/domain/consent/index.js';
import type { App, NoticeVersion } from '../../shared/domain/types.js';
import {
  corsPreflight,
  requireApiKey,
  requireSecretKey,
  requireSecretOrBrowser,
  requireSiteKey,
} from '../../shared/http/auth.js';
import { locals } from '../../shared/http/locals.js';
import { issuePrincipalToken } from '../../shared/principal/index.js';
import type { RunningProcess } from '../../bin/process.js';
import type { ServiceModule } from '../../shared/module.js';
import { testProcess } from '../helpers/stack.js';
import { noticeBody } from '../consent/fixture.js';
import { ADMIN_TOKEN, ENCRYPTION_KEY, client, sandboxApp } from './client.js';

/** Test-only routes guarded by each middleware; they echo who was authenticated. */
const probe: ServiceModule = {
  name: 'probe',
  mount(app, rt) {
    const echo: RequestHandler = (_req, res) => {
      const l = locals(res);
      res.json({
        appId: l.app?.appId,
        via: l.via,
        apiKeyId: l.apiKey?.id,
        referenceId: l.principal?.referenceId,
      });
    };
    app.get('/probe/secret', requireSecretKey(rt), echo);
    app.get('/probe/read', requireApiKey(rt, 'consents:read'), echo);
    app.get('/probe/ledger', requireApiKey(rt, 'ledger:read'), echo);
    app.options('/probe/public', corsPreflight(rt));
    app.post('/probe/public', requireSecretOrBrowser(rt), echo);
    app.post('/probe/widget', requireSiteKey(rt), echo);
  },
};

const SHOP = 'https://shop.example';
const OTHER = 'https://other.example';

let p: RunningProcess;
/** A second process on the same tables, with a short credential cache TTL. */
let p2: RunningProcess;
let admin: ReturnType<typeof client>;
let call: ReturnType<typeof client>;
let call2: ReturnType<typeof client>;
let a: { appId: string; siteKey: string; secretKey: string };
let b: { appId: string; siteKey: string; secretKey: string };

async function newApp(origins: string[]) {
  const r = await admin('POST', '/apps', sandboxApp({ allowedOrigins: origins }));
  expect(r.status).toBe(201);
  return { appId: r.body.app.appId, siteKey: r.body.siteKey, secretKey: r.body.secretKey };
}

beforeAll(async () => {
  // A long TTL here: only the immediate in-process invalidation can explain a changed answer.
  p = await testProcess('auth', [adminService, probe], [], {
    SVC_ADMIN_TOKEN: ADMIN_TOKEN,
    SVC_ENCRYPTION_KEY: ENCRYPTION_KEY,
    CREDENTIAL_CACHE_TTL_MS: '600000',
  });
  p2 = await testProcess('auth2', [adminService, probe], [], {
    SVC_ENCRYPTION_KEY: ENCRYPTION_KEY,
    TABLE_PREFIX: p.rt.config.TABLE_PREFIX,
    TOPIC_PREFIX: p.rt.config.TOPIC_PREFIX,
    CREDENTIAL_CACHE_TTL_MS: '300',
  });
  admin = client(`${p.url}/api/v1/admin`, { authorization: `Bearer ${ADMIN_TOKEN}` });
  call = client(p.url);
  call2 = client(p2.url);
  a = await newApp([SHOP]);
  b = await newApp([OTHER]);
});
afterAll(async () => {
  await p2?.close();
  await p?.close();
});

describe('requireSecretKey', () => {
  it('authenticates the app of the key and refuses missing or unknown keys', async () => {
    expect(
      (await call('GET', '/probe/secret', undefined, { 'x-secret-key': a.secretKey })).body,
    ).toEqual({
      appId: a.appId,
      via: 'secretKey',
    });
    expect(
      (await call('GET', '/probe/secret', undefined, { 'x-secret-key': b.secretKey })).body.appId,
    ).toBe(b.appId);
    const missing = await call('GET', '/probe/secret');
    expect(missing.status).toBe(401);
    const unknown = await call('GET', '/probe/secret', undefined, {
      'x-secret-key': `svc_sk_test_${'A'.repeat(40)}`,
    });
    expect(unknown.status).toBe(401);
    const malformed = await call('GET', '/probe/secret', undefined, { 'x-secret-key': 'x' });
    expect(malformed.body.detail).toBe(unknown.body.detail);
  });

  it('refuses a rotated-away key at once, in every runtime of this process', async () => {
    const app = await newApp([SHOP]);
    const old = { 'x-secret-key': app.secretKey };
    expect((await call('GET', '/probe/secret', undefined, old)).status).toBe(200);
    expect((await call2('GET', '/probe/secret', undefined, old)).status).toBe(200);
    const rotated = await admin('POST', `/apps/${app.appId}/secret/rotate`);
    const fresh = { 'x-secret-key': rotated.body.secretKey };
    expect((await call('GET', '/probe/secret', undefined, old)).status).toBe(401);
    expect((await call2('GET', '/probe/secret', undefined, old)).status).toBe(401);
    expect((await call('GET', '/probe/secret', undefined, fresh)).body.appId).toBe(app.appId);
    expect((await call2('GET', '/probe/secret', undefined, fresh)).body.appId).toBe(app.appId);
  });
});

describe('requireApiKey', () => {
  it('checks the key, its scope and revocation, and binds the key to its own app', async () => {
    const key = async (appId: string, scopes: string[]) =>
      (await admin('POST', `/apps/${appId}/api-keys`, { name: 'k', scopes })).body as {
        id: string;
        key: string;
      };
    const ka = await key(a.appId, ['consents:read']);
    const kb = await key(b.appId, ['consents:read', 'ledger:read']);
    const bearer = (k: string) => ({ authorization: `Bearer ${k}` });

    expect((await call('GET', '/probe/read', undefined, bearer(ka.key))).body).toEqual({
      appId: a.appId,
      via: 'apiKey',
      apiKeyId: ka.id,
    });
    expect((await call('GET', '/probe/read', undefined, bearer(kb.key))).body.appId).toBe(b.appId);
    expect((await call('GET', '/probe/ledger', undefined, bearer(kb.key))).status).toBe(200);

    const scope = await call('GET', '/probe/ledger', undefined, bearer(ka.key));
    expect(scope.status).toBe(403);
    expect(scope.body.code).toBe('SVC_FORBIDDEN');

    const missing = await call('GET', '/probe/read');
    expect(missing.status).toBe(401);
    expect(missing.headers.get('www-authenticate')).toBe('Bearer');
    const unknown = await call('GET', '/probe/read', undefined, bearer(`svc_ak_${'Z'.repeat(40)}`));
    expect(unknown.status).toBe(401);
    // The admin token, or a secret key, is not an API key.
    expect((await call('GET', '/probe/read', undefined, bearer(ADMIN_TOKEN))).status).toBe(401);
    expect((await call('GET', '/probe/read', undefined, bearer(a.secretKey))).status).toBe(401);

    expect((await admin('DELETE', `/apps/${a.appId}/api-keys/${ka.id}`)).status).toBe(200);
    const revoked = await call('GET', '/probe/read', undefined, bearer(ka.key));
    expect(revoked.status).toBe(401);
    // Revoked and never-existing keys are indistinguishable.
    expect(revoked.body.detail).toBe(unknown.body.detail);
    expect((await call('GET', '/probe/read', undefined, bearer(kb.key))).status).toBe(200);
  });
});

describe('requireSecretOrBrowser (public API)', () => {
  /** A principal of app a (a widget capture) and a principal token for it. */
  async function principalOfA() {
    const app = (await admin('GET', `/apps/${a.appId}`)).body as App;
    const notice = await admin(
      'POST',
      `/apps/${a.appId}/notices`,
      noticeBody(`probe_${Date.now()}`, [{ name: 'analytics' }]),
    );
    const c = await captureConsent(p.rt, app, notice.body as NoticeVersion, {
      mode: 'silent',
      granted: [],
      language: 'en',
      pageUrl: 'https://shop.example/',
      userAgent: 'vitest',
      ipHash: 'h',
    });
    const { token } = issuePrincipalToken(p.rt.config, app, c.referenceId, {
      kind: 'browser',
      ttlMs: 60_000,
    });
    return { referenceId: c.referenceId, token };
  }

  it('accepts the secret key, or the site key from an allowlisted origin with a principal token, with CORS headers', async () => {
    const server = await call('POST', '/probe/public', {}, { 'x-secret-key': a.secretKey });
    expect(server.body).toEqual({ appId: a.appId, via: 'secretKey' });

    const { referenceId, token } = await principalOfA();
    const browser = await call(
      'POST',
      '/probe/public',
      {},
      { 'x-site-key': a.siteKey, origin: SHOP, authorization: `Bearer ${token}` },
    );
    expect(browser.status).toBe(200);
    expect(browser.body).toEqual({ appId: a.appId, via: 'siteKey', referenceId });
    expect(browser.headers.get('access-control-allow-origin')).toBe(SHOP);
    expect(browser.headers.get('access-control-allow-credentials')).toBe('false');
    expect(browser.headers.get('vary')).toMatch(/Origin/);

    // The site key and an allowlisted Origin alone (anyone can send both) are not enough.
    const anonymous = await call(
      'POST',
      '/probe/public',
      {},
      { 'x-site-key': a.siteKey, origin: SHOP },
    );
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toBe('Bearer');
    // Nor is a token of a's principal with b's site key.
    const crossed = await call(
      'POST',
      '/probe/public',
      {},
      { 'x-site-key': b.siteKey, origin: OTHER, authorization: `Bearer ${token}` },
    );
    expect(crossed.status).toBe(401);
  });

  it('refuses other origins (403), missing credentials and unknown site keys (401)', async () => {
    const wrong = await call(
      'POST',
      '/probe/public',
      {},
      { 'x-site-key': a.siteKey, origin: OTHER },
    );
    expect(wrong.status).toBe(403);
    expect(wrong.headers.get('access-control-allow-origin')).toBeNull();
    // b's origin does not open a's site key.
    expect(b.siteKey).not.toBe(a.siteKey);
    const noOrigin = await call('POST', '/probe/public', {}, { 'x-site-key': a.siteKey });
    expect(noOrigin.status).toBe(403);
    expect((await call('POST', '/probe/public', {}, { origin: SHOP })).status).toBe(401);
    const unknown = await call(
      'POST',
      '/probe/public',
      {},
      {
        'x-site-key': `APP_${'Q'.repeat(24)}`,
        origin: SHOP,
      },
    );
    expect(unknown.status).toBe(401);
    const badSecret = await call(
      'POST',
      '/probe/public',
      {},
      {
        'x-secret-key': 'svc_sk_wrong',
        'x-site-key': a.siteKey,
        origin: SHOP,
      },
    );
    expect(badSecret.status).toBe(401);
  });

  it('answers preflights without letting the browser send the secret key', async () => {
    const res = await fetch(`${p.url}/probe/public`, {
      method: 'OPTIONS',
      headers: {
        origin: SHOP,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type, x-site-key',
      },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe(SHOP);
    const allowed = res.headers.get('access-control-allow-headers') ?? '';
    expect(allowed.split(/,\s*/).sort()).toEqual([
      'authorization',
      'content-type',
      'idempotency-key',
      'x-site-key',
    ]);
    expect(res.headers.get('access-control-allow-methods')).toContain('POST');
  });
});

describe('requireSiteKey (widget)', () => {
  it('takes the site key from the header or the body and enforces the allowlist', async () => {
    const fromBody = await call('POST', '/probe/widget', { siteKey: b.siteKey }, { origin: OTHER });
    expect(fromBody.body).toEqual({ appId: b.appId, via: 'siteKey' });
    expect(fromBody.headers.get('access-control-allow-origin')).toBe(OTHER);
    const fromHeader = await call(
      'POST',
      '/probe/widget',
      {},
      { 'x-site-key': a.siteKey, origin: SHOP },
    );
    expect(fromHeader.body.appId).toBe(a.appId);
    expect(
      (await call('POST', '/probe/widget', { siteKey: b.siteKey }, { origin: SHOP })).status,
    ).toBe(403);
    expect((await call('POST', '/probe/widget', {}, { origin: SHOP })).status).toBe(401);
  });

  it('follows an allowlist change made here at once', async () => {
    const app = await newApp([SHOP]);
    const req = (c: typeof call) =>
      c('POST', '/probe/widget', { siteKey: app.siteKey }, { origin: OTHER });
    expect((await req(call)).status).toBe(403);
    expect((await req(call2)).status).toBe(403);
    const patched = await admin('PATCH', `/apps/${app.appId}`, { allowedOrigins: [SHOP, OTHER] });
    expect(patched.status).toBe(200);
    expect((await req(call)).status).toBe(200);
    expect((await req(call2)).status).toBe(200);
  });

  it('serves lookups from the cache and sees a change made elsewhere within the TTL', async () => {
    const app = await newApp([SHOP]);
    const req = (c: typeof call) =>
      c('POST', '/probe/widget', { siteKey: app.siteKey }, { origin: OTHER });
    expect((await req(call)).status).toBe(403);
    expect((await req(call2)).status).toBe(403);
    // As another process would: a write this process's cache does not hear about.
    await p.rt.dynamo.doc.send(
      new UpdateCommand({
        TableName: p.rt.tables.entities,
        Key: { pk: `APP#${app.appId}`, sk: 'APP' },
        UpdateExpression: 'SET allowedOrigins = :o',
        ExpressionAttributeValues: { ':o': [SHOP, OTHER] },
      }),
    );
    await vi.waitFor(async () => expect((await req(call2)).status).toBe(200), {
      timeout: 5_000,
      interval: 100,
    });
    // The 10-minute TTL of the first runtime still answers from its cache.
    expect((await req(call)).status).toBe(403);
  });
});

describe('requireAdmin without a configured token', () => {
  it('answers 503: the admin API is disabled, not open', async () => {
    const r = await call2('POST', '/api/v1/admin/apps', sandboxApp(), {
      authorization: `Bearer ${ADMIN_TOKEN}`,
    });
    expect(r.status).toBe(503);
    expect(r.body.code).toBe('SVC_UNAVAILABLE');
    expect((await call2('GET', `/api/v1/admin/apps/${a.appId}`)).status).toBe(503);
  });
});
