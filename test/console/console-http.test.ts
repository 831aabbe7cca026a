import { randomBytes } from 'node:crypto';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminService } from '../../services/admin/index.js';
import { consoleService } from '../../services/console/index.js';
import { SESSION_TTL_MS, readSession } from '../../services/console/session.js';
import { BODY_SHOWN } from '../../services/console/tools-pages.js';
import { getApp } from '../../shared/domain/apps.js';
import type { RunningProcess } from '../../bin/process.js';
import { client, sandboxApp } from '../admin/client.js';
import { testProcess } from '../helpers/stack.js';
import { consoleClient, csrfOf } from './client.js';

/**
 * The console's sign-in, session and CSRF rules over real HTTP, without a browser
 * (docs/api.md, Console; docs/security.md, Console sessions): what a cookie allows, what
 * ends a session, which requests are refused and how.
 */

const token = `console-admin-${randomBytes(16).toString('hex')}`;
let p: RunningProcess;
let admin: ReturnType<typeof client>;
let shop: { appId: string; secretVersion: number };
let other: { appId: string };

async function createApp(name: string) {
  const r = await admin('POST', '/apps', sandboxApp({ name }));
  expect(r.status).toBe(201);
  return r.body.app as { appId: string; secretVersion: number };
}

async function apiKey(appId: string, scopes: string[]) {
  const r = await admin('POST', `/apps/${appId}/api-keys`, {
    name: `k-${scopes.join('+')}`,
    scopes,
  });
  expect(r.status).toBe(201);
  return r.body as { id: string; key: string };
}

beforeAll(async () => {
  p = await testProcess('console-http', [adminService, consoleService], [], {
    SVC_ADMIN_TOKEN: token,
    // A small budget of failed authentications, spent from addresses of the tests' choosing.
    RATE_LIMIT_AUTH_FAILURE_BURST: '4',
    RATE_LIMIT_AUTH_FAILURE_RPS: '0.01',
  });
  admin = client(`${p.url}/api/v1/admin`, { authorization: `Bearer ${token}` });
  shop = await createApp('Shop');
  other = await createApp('Other');
});
afterAll(async () => {
  await p?.close();
});

async function signedIn(credential = token, from?: string) {
  const c = consoleClient(p.url, from ? { from } : {});
  const r = await c.post('/console/sign-in', { credential });
  expect(r.status, r.text).toBe(303);
  return c;
}

describe('console sign-in', () => {
  it('sends a visitor without a session to the sign-in page, served under a strict CSP', async () => {
    const c = consoleClient(p.url);
    const r = await c.get('/console/');
    expect(r.status).toBe(303);
    expect(r.location).toBe('/console/sign-in');
    const page = await c.get('/console/sign-in');
    expect(page.status).toBe(200);
    expect(page.headers['content-security-policy']).toContain("default-src 'self'");
    expect(page.headers['content-security-policy']).not.toContain('unsafe-inline');
    expect(page.headers['cache-control']).toBe('no-store');
    // One script, from a file; no inline script or style anywhere.
    expect(page.text.match(/<script/g)).toHaveLength(1);
    expect(page.text).toContain('<script src="/console/assets/console.js" defer></script>');
    expect(page.text).not.toMatch(/<style|style=/);
    const js = await c.get('/console/assets/console.js');
    expect(js.status).toBe(200);
    expect(js.headers['content-type']).toMatch(/javascript/);
    expect(js.text).toContain('data-copy');
  });

  it('opens a session for the admin token: a __Host- cookie, HttpOnly, SameSite=Strict, Secure', async () => {
    const c = consoleClient(p.url);
    const r = await c.post('/console/sign-in', { credential: token });
    expect(r.status).toBe(303);
    expect(r.location).toBe('/console/');
    const [cookie] = r.setCookie;
    // Secure even over plain http (a TLS proxy off loopback leaves req.secure false), on
    // Path=/ with no Domain: what `__Host-` requires, so no sibling subdomain can plant one.
    expect(cookie).toMatch(/^__Host-svc_console=[A-Za-z0-9_-]{43}; /);
    expect(cookie).toContain('; Path=/;');
    expect(cookie).not.toContain('Domain');
    expect(cookie).toContain('HttpOnly');
    expect(cookie).toContain('SameSite=Strict');
    expect(cookie).toContain('; Secure');
    expect(cookie).toMatch(/Max-Age=(28[0-7]\d\d|28800)\b/);
    // PUBLIC_BASE_URL is http here: no HSTS.
    expect(r.headers['strict-transport-security']).toBeUndefined();
    const list = await c.get('/console/');
    expect(list.status).toBe(200);
    expect(list.text).toContain(`/console/apps/${shop.appId}`);
    expect(list.text).toContain(`/console/apps/${other.appId}`);

    // Signing in again replaces the browser's session: the first id is gone.
    const first = c.session!;
    expect((await c.post('/console/sign-in', { credential: token })).status).toBe(303);
    expect(c.session).not.toBe(first);
    expect(await readSession(p.rt, first)).toBeUndefined();
    expect((await c.get('/console/')).status).toBe(200);

    // The store holds a hash of the id, never the id itself.
    const items = await p.rt.dynamo.doc.send(
      new ScanCommand({ TableName: p.rt.tables.idempotency }),
    );
    const dump = JSON.stringify(items.Items);
    expect(dump).toContain('console-session#');
    expect(dump).not.toContain(c.session!);
    expect(dump).not.toContain(token);
  });

  it('refuses a wrong token, an API key without the console scope and a revoked one, all alike', async () => {
    const plain = await apiKey(shop.appId, ['consents:read', 'ledger:read']);
    const revoked = await apiKey(shop.appId, ['console']);
    expect((await admin('DELETE', `/apps/${shop.appId}/api-keys/${revoked.id}`)).status).toBe(200);
    const c = consoleClient(p.url, { from: '127.0.0.2' });
    for (const credential of [`${token}x`, plain.key, revoked.key]) {
      const r = await c.post('/console/sign-in', { credential });
      expect(r.status, credential.slice(0, 8)).toBe(401);
      expect(r.setCookie).toEqual([]);
      expect(r.text).toContain('The admin token or API key was not accepted');
    }
    // A client that asks for JSON gets problem+json.
    const json = await c.post(
      '/console/sign-in',
      { credential: 'nope' },
      { headers: { accept: 'application/json' } },
    );
    expect(json.status).toBe(401);
    expect(json.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(JSON.parse(json.text)).toMatchObject({ status: 401, code: 'SVC_UNAUTHORIZED' });
  });

  it('sends HSTS on every answer when PUBLIC_BASE_URL is https, reached over plain http', async () => {
    const tls = await testProcess('console-hsts', [consoleService], [], {
      SVC_ADMIN_TOKEN: token,
      PUBLIC_BASE_URL: 'https://consent.example.test',
    });
    try {
      const c = consoleClient(tls.url);
      const page = await c.get('/console/sign-in');
      expect(page.headers['strict-transport-security']).toBe('max-age=31536000; includeSubDomains');
      const health = await c.get('/healthz');
      expect(health.headers['strict-transport-security']).toBe(
        'max-age=31536000; includeSubDomains',
      );
      const r = await c.post('/console/sign-in', { credential: token });
      expect(r.status).toBe(303);
      expect(r.setCookie[0]).toMatch(/^__Host-svc_console=[A-Za-z0-9_-]{43}; Path=\/; .*; Secure$/);
    } finally {
      await tls.close();
    }
  });

  it('limits failed sign-ins per address like every failed authentication: 429, even for the right token', async () => {
    const c = consoleClient(p.url, { from: '127.0.0.3' });
    for (let i = 0; i < 4; i++)
      expect((await c.post('/console/sign-in', { credential: `wrong-${i}` })).status).toBe(401);
    const blocked = await c.post('/console/sign-in', { credential: token });
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
    expect(blocked.setCookie).toEqual([]);
    // Another address is not affected.
    await signedIn(token, '127.0.0.4');
  });

  it('refuses a sign-in posted from another origin', async () => {
    const c = consoleClient(p.url);
    const r = await c.post(
      '/console/sign-in',
      { credential: token },
      { headers: { origin: 'https://evil.example' } },
    );
    expect(r.status).toBe(403);
    expect(r.setCookie).toEqual([]);
  });
});

describe('CSRF', () => {
  it('refuses a change without the session’s token, with a wrong one, or from another origin: 403 problem+json', async () => {
    const c = await signedIn();
    const page = await c.get(`/console/apps/${shop.appId}`);
    expect(page.status).toBe(200);
    const csrf = csrfOf(page.text);
    const before = (await getApp(p.rt, shop.appId))!.secretVersion;
    const attempts: Record<string, string>[] = [
      {},
      { _csrf: 'x'.repeat(43) },
      { _csrf: csrfOf((await (await signedIn()).get('/console/')).text) }, // another session's
    ];
    for (const form of attempts) {
      const r = await c.post(`/console/apps/${shop.appId}/secret/rotate`, form);
      expect(r.status, JSON.stringify(form)).toBe(403);
      expect(r.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(JSON.parse(r.text)).toMatchObject({ code: 'SVC_FORBIDDEN', status: 403 });
    }
    const cross = await c.post(
      `/console/apps/${shop.appId}/secret/rotate`,
      { _csrf: csrf },
      { headers: { origin: 'https://evil.example' } },
    );
    expect(cross.status).toBe(403);
    expect((await getApp(p.rt, shop.appId))!.secretVersion).toBe(before);

    // The right token, as the form field or the header, is accepted.
    const ok = await c.post(
      `/console/apps/${shop.appId}/secret/rotate`,
      {},
      { headers: { 'x-csrf-token': csrf } },
    );
    expect(ok.status).toBe(200);
    expect(ok.text).toMatch(/svc_sk_test_[0-9A-Za-z]{40}/);
    expect((await getApp(p.rt, shop.appId))!.secretVersion).toBe(before + 1);
  });

  it('refuses an API key without a name or scope (422), and creates none', async () => {
    const c = await signedIn();
    const page = await c.get(`/console/apps/${other.appId}`);
    const csrf = csrfOf(page.text);
    const before = (await admin('GET', `/apps/${other.appId}/api-keys`)).body.items.length;
    const forms: Record<string, string>[] = [
      { _csrf: csrf, name: 'k' },
      { _csrf: csrf, name: ' ', scopes: 'console' },
      { _csrf: csrf, name: 'k', scopes: 'admin' },
    ];
    for (const form of forms) {
      const r = await c.post(`/console/apps/${other.appId}/api-keys`, form);
      expect(r.status, JSON.stringify(form)).toBe(422);
      expect(r.text).toContain('The form is not valid');
    }
    expect((await admin('GET', `/apps/${other.appId}/api-keys`)).body.items).toHaveLength(before);
    // The operator opens an app by its id.
    const open = await c.get(`/console/open?appId=${other.appId}`);
    expect(open.status).toBe(303);
    expect(open.location).toBe(`/console/apps/${other.appId}`);
  });

  it('shows the checklist and the sandbox tools from the domain, in a process without the admin API too', async () => {
    const c = await signedIn();
    const page = await c.get(`/console/apps/${shop.appId}`);
    expect(page.text).toContain('id="checklist"');
    expect(page.text).toContain(`/console/apps/${shop.appId}/sandbox`);
    // A process with the console alone: the same checklist and tools, read and changed through
    // the domain's functions rather than the admin API.
    const alone = await testProcess('console-alone', [consoleService], [], {
      SVC_ADMIN_TOKEN: token,
      TABLE_PREFIX: p.rt.config.TABLE_PREFIX,
    });
    try {
      const c2 = consoleClient(alone.url);
      expect((await c2.post('/console/sign-in', { credential: token })).status).toBe(303);
      const bare = await c2.get(`/console/apps/${shop.appId}`);
      expect(bare.status).toBe(200);
      expect(bare.text).toContain('id="item-webhook_signed_test"');
      const tools = await c2.get(`/console/apps/${shop.appId}/sandbox`);
      expect(tools.status).toBe(200);
      expect(tools.text).toContain(`/sandbox/inbox/${shop.appId}`);
      const attest = await c2.post(
        `/console/apps/${shop.appId}/checklist/grievance_contact/attest`,
        {
          _csrf: csrfOf(bare.text),
          note: 'Published on the contact page',
        },
      );
      expect(attest.status).toBe(303);
      expect(attest.location).toBe(
        `/console/apps/${shop.appId}?done=attested#item-grievance_contact`,
      );
    } finally {
      await alone.close();
    }
    const checklist = await admin('GET', `/apps/${shop.appId}/checklist`);
    const item = (
      checklist.body.areas as { items: { id: string; status: string; evidence: string }[] }[]
    )
      .flatMap((a) => a.items)
      .find((x) => x.id === 'grievance_contact')!;
    expect(item.status).toBe('attested');
    expect(item.evidence).toMatch(
      /^Attested by operator \(console\) at .*: Published on the contact page$/,
    );
  });

  it('lists the inbox’s deliveries with their signature check, a long body cut on the page', async () => {
    const posted = await fetch(`${p.url}/sandbox/inbox/${shop.appId}`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain', 'webhook-id': 'msg_unsigned' },
      body: 'x'.repeat(BODY_SHOWN + 100),
    });
    // Kept, and refused as a receiver that verifies signatures refuses an unsigned one.
    expect(posted.status).toBe(401);
    const c = await signedIn();
    const page = await c.get(`/console/apps/${shop.appId}/sandbox`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('signature does not verify');
    expect(page.text).toContain('msg_unsigned');
    expect(page.text).toContain(`${'x'.repeat(BODY_SHOWN)}\n… 100 more characters`);
    expect(page.text).not.toContain('x'.repeat(BODY_SHOWN + 1));
  });

  it('refuses the checklist and sandbox forms without the session’s CSRF token: 403, nothing done', async () => {
    const c = await signedIn();
    const page = await c.get(`/console/apps/${other.appId}/sandbox`);
    expect(page.status).toBe(200);
    const csrf = csrfOf(page.text);
    const before = (await getApp(p.rt, other.appId))!;
    const forms: [string, Record<string, string>][] = [
      [`/checklist/own_records_kept/attest`, { note: 'x' }],
      [`/go-live`, { webhookUrl: 'https://other.example/hooks' }],
      [`/sandbox/webhook-url`, { webhookUrl: 'https://other.example/hooks' }],
      [`/sandbox/test-events`, { type: 'consent.granted', variant: 'signed' }],
      [
        `/sandbox/postbacks`,
        { dispatchId: 'dsp_01JZZZZZZZZZZZZZZZZZZZZZZZ', status: 'processed', risk: 'none' },
      ],
    ];
    for (const [action, form] of forms)
      for (const given of [{}, { _csrf: 'x'.repeat(43) }] as Record<string, string>[]) {
        const r = await c.post(`/console/apps/${other.appId}${action}`, { ...form, ...given });
        expect(r.status, action).toBe(403);
        expect(r.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(JSON.parse(r.text)).toMatchObject({ code: 'SVC_FORBIDDEN' });
      }
    const after = (await getApp(p.rt, other.appId))!;
    expect(after.webhookUrl).toBe(before.webhookUrl);
    expect(after.goLiveAt ?? null).toBeNull();
    const checklist = await admin('GET', `/apps/${other.appId}/checklist`);
    const items = (
      checklist.body.areas as { items: { id: string; status: string; evidence: string }[] }[]
    ).flatMap((a) => a.items);
    expect(items.find((x) => x.id === 'own_records_kept')!.status).toBe('pending');
    expect(items.find((x) => x.id === 'webhook_signed_test')!.evidence).toBe(
      'No signed test event has been sent',
    );
    // With the token, the same form is done (and answered with a redirect).
    const ok = await c.post(`/console/apps/${other.appId}/sandbox/webhook-url`, {
      _csrf: csrf,
      webhookUrl: 'https://other.example/hooks',
    });
    expect(ok.status).toBe(303);
    expect(ok.location).toBe(`/console/apps/${other.appId}/sandbox?done=webhook-url#webhook`);
    expect((await getApp(p.rt, other.appId))!.webhookUrl).toBe('https://other.example/hooks');
  });

  it('answers invalid checklist and sandbox forms with 422, an observed item’s attestation with 409, and an incomplete go-live with its failing items', async () => {
    const c = await signedIn();
    const page = await c.get(`/console/apps/${other.appId}`);
    const _csrf = csrfOf(page.text);
    const base = `/console/apps/${other.appId}`;
    const invalid: [string, Record<string, string>][] = [
      ['/checklist/own_records_kept/attest', { note: '  ' }],
      ['/sandbox/webhook-url', { webhookUrl: 'ftp://other.example/hooks' }],
      ['/sandbox/webhook-url', { webhookUrl: 'https://user:pw@other.example/hooks' }],
      ['/sandbox/test-events', { type: 'consent.nope', variant: 'signed' }],
      ['/sandbox/postbacks', { dispatchId: 'dsp_x', status: 'processed', risk: 'none' }],
      ['/go-live', { webhookUrl: 'http://other.example/hooks' }],
    ];
    for (const [action, form] of invalid) {
      const r = await c.post(`${base}${action}`, { _csrf, ...form });
      expect(r.status, `${action} ${JSON.stringify(form)}`).toBe(422);
    }
    const observed = await c.post(`${base}/checklist/notice_published/attest`, {
      _csrf,
      note: 'trust me',
    });
    expect(observed.status).toBe(409);
    expect(
      (await c.post(`${base}/checklist/no_such_item/attest`, { _csrf, note: 'x' })).status,
    ).toBe(404);
    // An unknown dispatch (or another app's) is 404, as in the admin API.
    const unknown = await c.post(`${base}/sandbox/postbacks`, {
      _csrf,
      dispatchId: 'dsp_01JZZZZZZZZZZZZZZZZZZZZZZZ',
      status: 'processed',
      risk: 'none',
    });
    expect(unknown.status).toBe(404);

    const refused = await c.post(`${base}/go-live`, {
      _csrf,
      webhookUrl: 'https://other.example/hooks',
    });
    expect(refused.status).toBe(409);
    expect(refused.text).toContain('Not ready to go live');
    expect(refused.text).toContain('id="go-live-refused"');
    expect(refused.text).toContain(`${base}#item-webhook_signed_test`);
    // A client that asks for JSON gets the refusal as problem+json, naming the same items.
    const json = await c.post(
      `${base}/go-live`,
      { _csrf, webhookUrl: 'https://other.example/hooks' },
      { headers: { accept: 'application/json' } },
    );
    expect(json.status).toBe(409);
    const problem = JSON.parse(json.text);
    expect(problem.code).toBe('SVC_CHECKLIST_INCOMPLETE');
    for (const e of problem.errors as { path: string }[])
      expect(refused.text).toContain(`#item-${e.path.replace('/checklist/', '')}`);
    expect((await getApp(p.rt, other.appId))!.goLiveAt ?? null).toBeNull();
  });

  it('refuses a change without a session: 401', async () => {
    const r = await consoleClient(p.url).post(`/console/apps/${shop.appId}/secret/rotate`, {
      _csrf: 'x',
    });
    expect(r.status).toBe(401);
  });
});

describe('console sessions', () => {
  it('an API-key session sees its own app only; another app is 404 for reads and changes', async () => {
    const k = await apiKey(shop.appId, ['console']);
    const c = consoleClient(p.url);
    const r = await c.post('/console/sign-in', { credential: k.key });
    expect(r.status).toBe(303);
    expect(r.location).toBe(`/console/apps/${shop.appId}`);
    const list = await c.get('/console/');
    expect(list.text).toContain(`/console/apps/${shop.appId}`);
    expect(list.text).not.toContain(other.appId);
    const own = await c.get(`/console/apps/${shop.appId}`);
    expect(own.status).toBe(200);
    const csrf = csrfOf(own.text);
    const before = (await getApp(p.rt, other.appId))!.secretVersion;
    expect((await c.get(`/console/apps/${other.appId}`)).status).toBe(404);
    expect(
      (await c.get(`/console/apps/${other.appId}/dispatches/dsp_01JZZZZZZZZZZZZZZZZZZZZZZZ`))
        .status,
    ).toBe(404);
    expect(
      (await c.post(`/console/apps/${other.appId}/secret/rotate`, { _csrf: csrf })).status,
    ).toBe(404);
    expect((await c.get(`/console/apps/${other.appId}/sandbox`)).status).toBe(404);
    expect(
      (
        await c.post(`/console/apps/${other.appId}/sandbox/test-events`, {
          _csrf: csrf,
          type: 'consent.granted',
          variant: 'signed',
        })
      ).status,
    ).toBe(404);
    expect(
      (
        await c.post(`/console/apps/${other.appId}/api-keys`, {
          _csrf: csrf,
          name: 'x',
          scopes: 'console',
        })
      ).status,
    ).toBe(404);
    expect((await getApp(p.rt, other.appId))!.secretVersion).toBe(before);
  });

  it('ends an API-key session when its key is revoked', async () => {
    const k = await apiKey(shop.appId, ['console']);
    const c = await signedIn(k.key);
    expect((await c.get(`/console/apps/${shop.appId}`)).status).toBe(200);
    expect((await admin('DELETE', `/apps/${shop.appId}/api-keys/${k.id}`)).status).toBe(200);
    const after = await c.get(`/console/apps/${shop.appId}`);
    expect(after.status).toBe(303);
    expect(after.location).toBe('/console/sign-in');
  });

  it('sign-out deletes the session: its cookie opens nothing afterwards', async () => {
    const c = await signedIn();
    const id = c.session!;
    const page = await c.get('/console/');
    const r = await c.post('/console/sign-out', { _csrf: csrfOf(page.text) });
    expect(r.status).toBe(303);
    expect(r.location).toBe('/console/sign-in');
    expect(r.setCookie[0]).toMatch(/^__Host-svc_console=; Path=\/; Max-Age=0;.*Secure/);
    expect(await readSession(p.rt, id)).toBeUndefined();
    const again = await c.get('/console/', { cookie: id });
    expect(again.status).toBe(303);
    expect(again.location).toBe('/console/sign-in');
    expect(
      (await c.post(`/console/apps/${shop.appId}/secret/rotate`, { _csrf: 'x' }, { cookie: id }))
        .status,
    ).toBe(401);
  });

  it('a session ends at its expiry and when the admin token changes', async () => {
    const a = await signedIn();
    expect(await readSession(p.rt, a.session!)).toMatchObject({ kind: 'admin' });
    expect(await readSession(p.rt, a.session!, Date.now() + SESSION_TTL_MS + 1)).toBeUndefined();
    const b = await signedIn();
    const rotated = { ...p.rt, config: { ...p.rt.config, SVC_ADMIN_TOKEN: `${token}-new` } };
    expect(await readSession(rotated, b.session!)).toBeUndefined();
    // Both were deleted on the way.
    expect((await a.get('/console/')).status).toBe(303);
    expect((await b.get('/console/')).status).toBe(303);
  });
});
