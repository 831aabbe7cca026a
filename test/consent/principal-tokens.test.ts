import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { widgetService } from '../../services/widget/index.js';
import type { RunningProcess } from '../../bin/process.js';
import { client } from '../admin/client.js';
import { publicApiService } from '../../services/public-api/index.js';
import { testProcess } from '../helpers/stack.js';
import {
  browser,
  secret,
  startConsentProcess,
  type ConsentFixture,
  type Reply,
  type TestApp,
} from './fixture.js';

/**
 * Principal tokens on the browser path of the public API (docs/security.md, Principal tokens): the
 * site key and the Origin only identify the app (anyone can send both), so without a valid token
 * naming the person no read or change goes through, and a token opens one principal of one app
 * only, for as long as it is unexpired, its app's secret is unrotated and its principal unerased.
 */

const ENCRYPTION_KEY = Buffer.alloc(32, 7).toString('base64');
/**
 * This file answers hundreds of 401s to one address on purpose; the failed-authentication limit
 * (test/foundation/rate-limits.test.ts) would otherwise turn later calls into 429s, by timing.
 */
const NO_AUTH_FAILURE_LIMIT = {
  RATE_LIMIT_AUTH_FAILURE_RPS: '100000',
  RATE_LIMIT_AUTH_FAILURE_BURST: '100000',
};
const P = '/api/public/consents/my-transactions';
const MINT = '/api/public/consents/principal-tokens';
const OPS = ['grant', 'revoke', 'erase'] as const;

let f: ConsentFixture;
let a: TestApp;
let b: TestApp;

interface Principal {
  referenceId: string;
  transactionId: string;
  recordId: string;
}

beforeAll(async () => {
  f = await startConsentProcess('principal-tokens', {
    services: [widgetService],
    env: { SVC_ENCRYPTION_KEY: ENCRYPTION_KEY, ...NO_AUTH_FAILURE_LIMIT },
  });
  const notice = { triggerKey: 'signup', purposes: [{ name: 'analytics' }, { name: 'marketing' }] };
  a = await f.createApp({ notice });
  b = await f.createApp({ notice });
});
afterAll(async () => {
  await f?.close();
});

/** A principal captured by the widget endpoint, as a browser would. */
async function capture(t: TestApp): Promise<Principal & { principalToken: string }> {
  const r = await f.call('POST', '/api/v1/widget/capture', {
    headers: { 'x-site-key': t.siteKey, origin: t.origin },
    body: {
      siteKey: t.siteKey,
      processId: 'signup',
      mode: 'silent',
      language: 'en',
      pageUrl: 'https://shop.example/signup',
    },
  });
  expect(r.status).toBe(201);
  const txn = await f.call('GET', `${P}/${r.body.consentId}`, { headers: secret(t) });
  return {
    referenceId: r.body.referenceId,
    transactionId: r.body.consentId,
    recordId: txn.body.records[0].recordId,
    principalToken: r.body.principalToken,
  };
}

/** What the app's server does for its signed-in user: mint a token with the secret key. */
async function mint(t: TestApp, referenceId: string, ttlSeconds?: number): Promise<string> {
  const r = await f.call('POST', MINT, {
    headers: secret(t),
    body: { referenceId, ...(ttlSeconds === undefined ? {} : { ttlSeconds }) },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.token;
}

/** Every read and change route of the browser path, for one principal's ids. */
function routes(x: Principal): [string, string, string, unknown][] {
  return [
    ['GET', `${P}?referenceId=${x.referenceId}`, 'list', undefined],
    ['GET', `${P}/${x.transactionId}`, 'get', undefined],
    ['GET', `${P}/${x.transactionId}?referenceId=${x.referenceId}`, 'get named', undefined],
    ...OPS.flatMap((op): [string, string, string, unknown][] => [
      ['POST', `${P}/${x.transactionId}/${op}`, `txn ${op}`, {}],
      ['POST', `${P}/${x.transactionId}/${op}`, `txn ${op} named`, { referenceId: x.referenceId }],
      ['POST', `${P}/records/${x.recordId}/${op}`, `record ${op}`, {}],
      ['POST', `${P}/bulk/${op}`, `bulk ${op}`, { referenceId: x.referenceId }],
      [
        'POST',
        `${P}/bulk/${op}`,
        `bulk ${op} named`,
        { referenceId: x.referenceId, transactionIds: [x.transactionId] },
      ],
    ]),
  ];
}

const states = async (t: TestApp, txn: string) =>
  (await f.call('GET', `${P}/${txn}`, { headers: secret(t) })).body.records.map(
    (r: { state: string }) => r.state,
  );

describe('the browser path without a principal token', () => {
  it('site key + allowlisted (forgeable) Origin is 401 on every read and change route', async () => {
    const x = await capture(a);
    for (const [method, path, name, body] of routes(x)) {
      const r = await f.call(method, path, {
        headers: browser(a),
        ...(body === undefined ? {} : { body }),
      });
      expect(r.status, name).toBe(401);
      expect(r.body.code, name).toBe('SVC_UNAUTHORIZED');
      expect(r.headers.get('www-authenticate'), name).toBe('Bearer');
    }
    // Not one change went through.
    expect(await states(a, x.transactionId)).toEqual(['granted', 'granted']);
  });

  it('a wrong or garbled bearer token is 401 too, and so is a secret key sent as one', async () => {
    const x = await capture(a);
    for (const token of [
      'svc_pt_',
      'svc_pt_abc.def',
      `svc_pt_${'A'.repeat(5000)}`,
      a.secretKey,
      `${x.principalToken}x`,
    ]) {
      const r = await f.call('GET', `${P}?referenceId=${x.referenceId}`, {
        headers: browser(a, token),
      });
      expect(r.status, token.slice(0, 20)).toBe(401);
    }
  });

  it('the preflight lets the browser send Authorization', async () => {
    const r = await f.call('OPTIONS', `${P}/x/revoke`, {
      headers: {
        origin: a.origin,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type, x-site-key',
      },
    });
    expect(r.status).toBe(204);
    expect(r.headers.get('access-control-allow-headers')).toContain('authorization');
  });
});

describe('minting tokens (the app’s server)', () => {
  it('POST /principal-tokens with x-secret-key → 201 { token, expiresAt }', async () => {
    const x = await capture(a);
    const before = Date.now();
    const r = await f.call('POST', MINT, {
      headers: secret(a),
      body: { referenceId: x.referenceId, ttlSeconds: 600 },
    });
    expect(r.status).toBe(201);
    expect(Object.keys(r.body).sort()).toEqual(['expiresAt', 'token']);
    expect(r.body.token).toMatch(/^svc_pt_[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    const exp = Date.parse(r.body.expiresAt);
    expect(exp).toBeGreaterThanOrEqual(before + 600_000 - 1000);
    expect(exp).toBeLessThanOrEqual(Date.now() + 600_000 + 1000);
    // The default is shorter than the 24 h ceiling.
    const d = await f.call('POST', MINT, {
      headers: secret(a),
      body: { referenceId: x.referenceId },
    });
    expect(Date.parse(d.body.expiresAt) - Date.now()).toBeLessThanOrEqual(3_600_000);
  });

  it('refuses the browser path, an unknown principal and lifetimes over 24 h', async () => {
    const x = await capture(a);
    const token = await mint(a, x.referenceId);
    // A browser, even holding a valid token, cannot mint (nor extend) tokens.
    const fromBrowser = await f.call('POST', MINT, {
      headers: browser(a, token),
      body: { referenceId: x.referenceId },
    });
    expect(fromBrowser.status).toBe(401);
    const unknown = await f.call('POST', MINT, {
      headers: secret(a),
      body: { referenceId: 'SVC-REF-00000000' },
    });
    expect(unknown.status).toBe(404);
    // Another app's principal is unknown to this app.
    const y = await capture(b);
    expect(
      (await f.call('POST', MINT, { headers: secret(a), body: { referenceId: y.referenceId } }))
        .status,
    ).toBe(404);
    for (const body of [
      { referenceId: x.referenceId, ttlSeconds: 86_401 },
      { referenceId: x.referenceId, ttlSeconds: 0 },
      { referenceId: 'nope' },
      {},
    ]) {
      const r = await f.call('POST', MINT, { headers: secret(a), body });
      expect(r.status, JSON.stringify(body)).toBe(422);
    }
  });
});

describe('the browser path with a principal token', () => {
  it('the widget capture’s token works for that principal on every route', async () => {
    const x = await capture(a);
    expect(x.principalToken).toMatch(/^svc_pt_/);
    const h = browser(a, x.principalToken);
    const list = await f.call('GET', `${P}?referenceId=${x.referenceId}`, { headers: h });
    expect(list.status).toBe(200);
    expect(list.headers.get('access-control-allow-origin')).toBe(a.origin);
    expect(list.body.items.map((t: { transactionId: string }) => t.transactionId)).toEqual([
      x.transactionId,
    ]);
    expect((await f.call('GET', `${P}/${x.transactionId}`, { headers: h })).status).toBe(200);
    const revoked = await f.call('POST', `${P}/records/${x.recordId}/revoke`, {
      headers: h,
      body: {},
    });
    expect(revoked.status).toBe(200);
    expect(revoked.body.records[0].state).toBe('revoked');
    const bulk = await f.call('POST', `${P}/bulk/grant`, {
      headers: h,
      body: { referenceId: x.referenceId },
    });
    expect(bulk.body.results).toEqual([{ id: x.transactionId, ok: true, status: 'active' }]);
    // The principal acted, through the token.
    const hist = (await f.itemsOf(a.app.appId))
      .history()
      .filter((i) => i.transactionId === x.transactionId && i.operation !== 'create');
    expect(hist.map((i) => i.who)).toEqual([
      { source: 'portal', credential: 'principalToken' },
      { source: 'portal', credential: 'principalToken' },
    ]);
  });

  it('a token for principal A can never touch principal B', async () => {
    const x = await capture(a);
    const y = await capture(a);
    const h = browser(a, x.principalToken);
    const cases: [string, () => Promise<Reply>, number][] = [
      ['list B', () => f.call('GET', `${P}?referenceId=${y.referenceId}`, { headers: h }), 403],
      ['get B', () => f.call('GET', `${P}/${y.transactionId}`, { headers: h }), 404],
      [
        'get B named as B',
        () => f.call('GET', `${P}/${y.transactionId}?referenceId=${y.referenceId}`, { headers: h }),
        403,
      ],
      ...OPS.flatMap((op): [string, () => Promise<Reply>, number][] => [
        [
          `${op} B's txn`,
          () => f.call('POST', `${P}/${y.transactionId}/${op}`, { headers: h, body: {} }),
          404,
        ],
        [
          `${op} B's txn named as B`,
          () =>
            f.call('POST', `${P}/${y.transactionId}/${op}`, {
              headers: h,
              body: { referenceId: y.referenceId },
            }),
          403,
        ],
        [
          `${op} B's record`,
          () => f.call('POST', `${P}/records/${y.recordId}/${op}`, { headers: h, body: {} }),
          404,
        ],
        [
          `bulk ${op} for B`,
          () =>
            f.call('POST', `${P}/bulk/${op}`, { headers: h, body: { referenceId: y.referenceId } }),
          403,
        ],
      ]),
    ];
    for (const [name, run, status] of cases) expect((await run()).status, name).toBe(status);
    // Naming B's ids under A's own referenceId finds nothing of B.
    const bulk = await f.call('POST', `${P}/bulk/erase`, {
      headers: h,
      body: {
        referenceId: x.referenceId,
        transactionIds: [y.transactionId],
        recordIds: [y.recordId],
      },
    });
    expect(bulk.body.results.map((r: { ok: boolean }) => r.ok)).toEqual([false, false]);
    expect(await states(a, y.transactionId)).toEqual(['granted', 'granted']);
  });

  it('a token of app A is refused with app B’s site key', async () => {
    const x = await capture(a);
    const r = await f.call('GET', `${P}?referenceId=${x.referenceId}`, {
      headers: browser(b, x.principalToken),
    });
    expect(r.status).toBe(401);
  });

  it('an expired token is 401', async () => {
    const x = await capture(a);
    const token = await mint(a, x.referenceId, 2);
    const get = () =>
      f.call('GET', `${P}?referenceId=${x.referenceId}`, { headers: browser(a, token) });
    expect((await get()).status).toBe(200);
    await vi.waitFor(async () => expect((await get()).status).toBe(401), {
      timeout: 10_000,
      interval: 200,
    });
  });

  it('every token of an app is 401 at once after its secret key is rotated', async () => {
    const c = await f.createApp({
      notice: { triggerKey: 'signup', purposes: [{ name: 'analytics' }] },
    });
    const x = await capture(c);
    const minted = await mint(c, x.referenceId);
    const get = (token: string) =>
      f.call('GET', `${P}/${x.transactionId}`, { headers: browser(c, token) });
    expect((await get(x.principalToken)).status).toBe(200);
    expect((await get(minted)).status).toBe(200);
    const { secretKey } = await f.admin('POST', `/apps/${c.app.appId}/secret/rotate`);
    expect((await get(x.principalToken)).status).toBe(401);
    expect((await get(minted)).status).toBe(401);
    // A token minted with the new secret works.
    c.secretKey = secretKey;
    expect((await get(await mint(c, x.referenceId))).status).toBe(200);
  });

  it('a principal’s tokens are 401 at once when all of its consent is erased', async () => {
    const x = await capture(a);
    const token = await mint(a, x.referenceId);
    const second = await f.call('POST', '/api/v1/widget/capture', {
      headers: { 'x-site-key': a.siteKey, origin: a.origin },
      body: {
        siteKey: a.siteKey,
        processId: 'signup',
        mode: 'silent',
        language: 'en',
        pageUrl: 'https://shop.example/signup',
      },
    });
    const other = second.body.principalToken as string; // another principal: unaffected
    const h = browser(a, token);
    // Erasing part of it (one record) leaves the token working.
    const part = await f.call('POST', `${P}/records/${x.recordId}/erase`, { headers: h, body: {} });
    expect(part.status).toBe(200);
    expect((await f.call('GET', `${P}?referenceId=${x.referenceId}`, { headers: h })).status).toBe(
      200,
    );
    // The last of it, erased by the principal: the same token is refused from then on.
    const all = await f.call('POST', `${P}/${x.transactionId}/erase`, { headers: h, body: {} });
    expect(all.status).toBe(200);
    expect(all.body.status).toBe('erased');
    expect((await f.call('GET', `${P}?referenceId=${x.referenceId}`, { headers: h })).status).toBe(
      401,
    );
    expect(
      (await f.call('POST', `${P}/${x.transactionId}/revoke`, { headers: h, body: {} })).status,
    ).toBe(401);
    expect(
      (
        await f.call('GET', `${P}?referenceId=${second.body.referenceId}`, {
          headers: browser(a, other),
        })
      ).status,
    ).toBe(200);
  });

  it('erased by the app’s server (bulk, all of the principal): its browser tokens stop too', async () => {
    const x = await capture(a);
    const h = browser(a, x.principalToken);
    expect((await f.call('GET', `${P}/${x.transactionId}`, { headers: h })).status).toBe(200);
    const r = await f.call('POST', `${P}/bulk/erase`, {
      headers: secret(a),
      body: { referenceId: x.referenceId },
    });
    expect(r.body.results).toEqual([{ id: x.transactionId, ok: true, status: 'erased' }]);
    expect((await f.call('GET', `${P}/${x.transactionId}`, { headers: h })).status).toBe(401);
  });
});

describe('signing keys', () => {
  let other: RunningProcess;
  let rotated: RunningProcess;

  beforeAll(async () => {
    // Processes on the same tables and the same encryption key, with other token key ids.
    const shared = {
      ...NO_AUTH_FAILURE_LIMIT,
      SVC_ENCRYPTION_KEY: ENCRYPTION_KEY,
      TABLE_PREFIX: f.p.rt.config.TABLE_PREFIX,
      TOPIC_PREFIX: f.p.rt.config.TOPIC_PREFIX,
    };
    other = await testProcess('principal-tokens-k0', [publicApiService], [], {
      ...shared,
      PRINCIPAL_TOKEN_KEY_ID: 'k0',
    });
    rotated = await testProcess('principal-tokens-k2', [publicApiService], [], {
      ...shared,
      PRINCIPAL_TOKEN_KEY_ID: 'k2',
      PRINCIPAL_TOKEN_PREVIOUS_KEY_IDS: 'k1',
    });
  });
  afterAll(async () => {
    await other?.close();
    await rotated?.close();
  });

  it('a token under a key id this process does not accept is 401; a listed previous key id works', async () => {
    const x = await capture(a);
    const get = (url: string, token: string) =>
      client(url)('GET', `${P}?referenceId=${x.referenceId}`, undefined, browser(a, token));
    const k0 = await client(other.url)('POST', MINT, { referenceId: x.referenceId }, secret(a));
    expect(k0.status).toBe(201);
    // Signed under k0: a valid token there, unknown here.
    expect((await get(other.url, k0.body.token)).status).toBe(200);
    expect((await get(f.p.url, k0.body.token)).status).toBe(401);
    expect((await get(rotated.url, k0.body.token)).status).toBe(401);
    // After a rotation to k2, tokens signed under k1 (the default) keep working until they expire.
    const k1 = await mint(a, x.referenceId);
    expect((await get(rotated.url, k1)).status).toBe(200);
    const k2 = await client(rotated.url)('POST', MINT, { referenceId: x.referenceId }, secret(a));
    expect((await get(rotated.url, k2.body.token)).status).toBe(200);
    expect((await get(f.p.url, k2.body.token)).status).toBe(401);
  });
});
