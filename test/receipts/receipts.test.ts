import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminService } from '../../services/admin/index.js';
import { consentsService } from '../../services/consents/index.js';
import { keysService } from '../../services/keys/index.js';
import { portalService } from '../../services/portal/index.js';
import { publicApiService } from '../../services/public-api/index.js';
import { widgetService } from '../../services/widget/index.js';
import { issuePrincipalToken } from '../../shared/principal/index.js';
import type { RunningProcess } from '../../bin/process.js';
import { RECEIPT_PURPOSE, verifyReceipt } from '../../shared/receipts/receipt.js';
import { keysFromJwks } from '../../shared/signing/keys.js';
import { client, type Reply } from '../admin/client.js';
import { testProcess } from '../helpers/stack.js';

/**
 * Signed consent receipts end to end (docs/receipts.md): a consent captured by the widget API and
 * changed by its principal, its receipt fetched over the public API, the portal API and the record
 * API, verified against the published key set (`/.well-known/svc-keys.json`), tampered, and asked
 * for by everyone who must not get it. The offline verifier runs as its own process.
 */

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '..', '..');
const ORIGIN = 'https://shop.example';
const token = `receipts-admin-${randomBytes(12).toString('hex')}`;
let p: RunningProcess;
let http: ReturnType<typeof client>;
let dir: string;

interface Shop {
  appId: string;
  siteKey: string;
  secretKey: string;
  /** consents:read + consents:write */
  apiKey: string;
}
let shop: Shop;
let other: Shop;
let notice: { noticeId: string; version: number; textHash: string };
/** The captured transaction and its principal, with the browser token the capture gave. */
let alice: { referenceId: string; transactionId: string; token: string };
let bob: { referenceId: string; transactionId: string; token: string };

const admin = (method: string, p: string, body?: unknown) =>
  http(method, `/api/v1/admin${p}`, body, { authorization: `Bearer ${token}` });

async function ok(r: Promise<Reply>, status = 200): Promise<Reply['body']> {
  const reply = await r;
  expect(reply.status, JSON.stringify(reply.body)).toBe(status);
  return reply.body;
}

async function newShop(name: string): Promise<Shop> {
  const created = await ok(
    admin('POST', '/apps', {
      name,
      environment: 'sandbox',
      webhookUrl: 'http://127.0.0.1:9/hook',
      allowedOrigins: [ORIGIN],
      contactEmail: `dpo@${name.toLowerCase()}.example`,
    }),
    201,
  );
  const appId = created.app.appId as string;
  const key = await ok(
    admin('POST', `/apps/${appId}/api-keys`, {
      name: 'rw',
      scopes: ['consents:read', 'consents:write'],
    }),
    201,
  );
  return { appId, siteKey: created.siteKey, secretKey: created.secretKey, apiKey: key.key };
}

const browser = (s: Shop, principalToken?: string) => ({
  'x-site-key': s.siteKey,
  origin: ORIGIN,
  ...(principalToken ? { authorization: `Bearer ${principalToken}` } : {}),
});

async function capture(s: Shop, purposes: string[]) {
  const body = await ok(
    http(
      'POST',
      '/api/v1/widget/capture',
      {
        siteKey: s.siteKey,
        processId: 'newsletter_signup',
        mode: 'granular',
        purposes,
        language: 'en',
        pageUrl: 'https://shop.example/signup',
        region: 'IN-MH',
      },
      browser(s),
    ),
    201,
  );
  return {
    referenceId: body.referenceId as string,
    transactionId: body.consentId as string,
    token: body.principalToken as string,
  };
}

const receiptPath = (id: string) => `/api/public/consents/my-transactions/${id}/receipt`;

async function publishedKeys() {
  const r = await fetch(`${p.url}/.well-known/svc-keys.json`);
  expect(r.status).toBe(200);
  return (await r.json()) as unknown;
}

/** Runs `npm run receipt:verify`'s script as its own process. */
async function cli(...args: string[]) {
  const argv = ['--import', 'tsx', path.join(ROOT, 'bin/receipt-verify.ts'), ...args];
  try {
    const r = await run(process.execPath, argv, { cwd: ROOT });
    return { code: 0, out: r.stdout };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code, out: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}
const lastLine = (out: string) => out.trim().split('\n').at(-1) ?? '';

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-receipts-'));
  p = await testProcess(
    'receipts',
    [adminService, consentsService, publicApiService, widgetService, portalService, keysService],
    [],
    { SVC_ADMIN_TOKEN: token, SVC_SIGNING_KEY: '7c'.repeat(32) },
  );
  http = client(p.url);
  shop = await newShop('Shop');
  other = await newShop('Other');
  const labels = {
    essential: { label: 'Sending the newsletter', description: 'To send it' },
    marketing: { label: 'Offers by e-mail', description: 'To send offers' },
  };
  for (const s of [shop, other]) {
    const n = await ok(
      admin('POST', `/apps/${s.appId}/notices`, {
        kind: 'data_collection',
        triggerKey: 'newsletter_signup',
        defaultLanguage: 'en',
        purposes: [
          { name: 'essential', required: true, dataItems: ['email'] },
          { name: 'marketing', required: false, dataItems: ['email', 'name'] },
        ],
        translations: { en: { title: 'Newsletter', body: 'We use:', purposes: labels } },
        validityDays: 365,
      }),
      201,
    );
    if (s === shop) notice = n;
  }
  alice = await capture(shop, ['essential']);
  bob = await capture(shop, ['essential', 'marketing']);
  // Alice then gives marketing from the app's page (the dashboard: her token, source portal).
  await ok(
    http(
      'POST',
      `/api/public/consents/my-transactions/${alice.transactionId}/grant`,
      {},
      browser(shop, alice.token),
    ),
  );
});
afterAll(async () => {
  await p?.close();
});

describe('consent receipts over the public API', () => {
  it('the principal’s browser gets a signed receipt of its transaction, verifiable with the published keys', async () => {
    const r = await http(
      'GET',
      receiptPath(alice.transactionId),
      undefined,
      browser(shop, alice.token),
    );
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.headers.get('cache-control')).toBe('no-store');
    expect(r.headers.get('content-disposition')).toBe(
      `attachment; filename="consent-receipt-${alice.transactionId}.json"`,
    );
    expect(r.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    const receipt = r.body;
    expect(receipt).toMatchObject({
      alignedWith: 'ISO/IEC TS 27560:2023',
      transactionId: alice.transactionId,
      referenceId: alice.referenceId,
      controller: { appId: shop.appId, name: 'Shop', contact: { email: 'dpo@shop.example' } },
      notice: {
        noticeId: notice.noticeId,
        version: notice.version,
        textHash: notice.textHash,
        processId: 'newsletter_signup',
      },
      language: 'en',
      region: 'IN-MH',
      method: { via: 'widget', mode: 'granular' },
      status: 'active',
    });
    expect(
      receipt.purposes.map((x: { purpose: string; state: string; dataItems: string[] }) => [
        x.purpose,
        x.state,
        x.dataItems,
      ]),
    ).toEqual([
      ['essential', 'granted', ['email']],
      ['marketing', 'granted', ['email', 'name']],
    ]);
    expect(
      receipt.history.map((h: Record<string, unknown>) => [h.purpose, h.operation, h.to, h.by]),
    ).toEqual([
      ['essential', 'create', 'granted', 'principal'],
      ['marketing', 'create', 'denied', 'principal'],
      ['marketing', 'grant', 'granted', 'principal'],
    ]);
    const jwks = await publishedKeys();
    const keys = keysFromJwks(jwks);
    expect(receipt.proof).toMatchObject({
      alg: 'EdDSA',
      purpose: RECEIPT_PURPOSE,
      canonicalization: 'RFC8785',
      keys: `${p.rt.config.PUBLIC_BASE_URL}/.well-known/svc-keys.json`,
    });
    expect(keys.has(receipt.proof.kid)).toBe(true);
    expect(verifyReceipt(receipt, keys)).toEqual({ ok: true, kid: receipt.proof.kid });

    // Tampered: a withdrawn purpose shown as given, or a data item hidden, no longer verifies.
    const edited = structuredClone(receipt);
    edited.purposes[1].state = 'revoked';
    expect(verifyReceipt(edited, keys)).toMatchObject({ ok: false });
    const hidden = structuredClone(receipt);
    hidden.purposes[1].dataItems = ['email'];
    expect(verifyReceipt(hidden, keys)).toMatchObject({ ok: false });

    // The offline verifier, as its own process, with the key set from a file and from the URL.
    fs.writeFileSync(path.join(dir, 'svc-keys.json'), JSON.stringify(jwks));
    fs.writeFileSync(path.join(dir, 'receipt.json'), JSON.stringify(receipt, null, 2));
    fs.writeFileSync(path.join(dir, 'tampered.json'), JSON.stringify(edited, null, 2));
    const good = await cli(
      path.join(dir, 'receipt.json'),
      '--keys',
      path.join(dir, 'svc-keys.json'),
    );
    expect(good.code, good.out).toBe(0);
    expect(good.out).toContain(`Consent receipt of transaction ${alice.transactionId}`);
    expect(good.out).toContain('marketing: granted [email, name]');
    expect(lastLine(good.out)).toBe(
      `OK: the receipt's signature verifies (key ${receipt.proof.kid})`,
    );
    const byUrl = await cli(
      path.join(dir, 'receipt.json'),
      '--keys',
      `${p.url}/.well-known/svc-keys.json`,
    );
    expect(byUrl.code, byUrl.out).toBe(0);
    const bad = await cli(
      path.join(dir, 'tampered.json'),
      '--keys',
      path.join(dir, 'svc-keys.json'),
    );
    expect(bad.code, bad.out).toBe(1);
    expect(lastLine(bad.out)).toMatch(/^NOT OK: the signature does not match the content/);
    const noKeys = await cli(path.join(dir, 'receipt.json'));
    expect(noKeys.code).toBe(2);
    expect(noKeys.out).toContain('usage: npm run receipt:verify');
    const missing = await cli(
      path.join(dir, 'nope.json'),
      '--keys',
      path.join(dir, 'svc-keys.json'),
    );
    expect(missing.code).toBe(2);
  });

  it('the app’s server (secret key) gets any of its own; a named principal must match', async () => {
    const keys = keysFromJwks(await publishedKeys());
    const server = { 'x-secret-key': shop.secretKey };
    const r = await http('GET', receiptPath(bob.transactionId), undefined, server);
    expect(r.status).toBe(200);
    expect(r.body.referenceId).toBe(bob.referenceId);
    expect(verifyReceipt(r.body, keys).ok).toBe(true);
    const named = `${receiptPath(bob.transactionId)}?referenceId=${bob.referenceId}`;
    expect((await http('GET', named, undefined, server)).status).toBe(200);
    const wrong = `${receiptPath(bob.transactionId)}?referenceId=${alice.referenceId}`;
    expect((await http('GET', wrong, undefined, server)).status).toBe(404);
  });

  it('refuses another principal, another app and an anonymous caller, and says nothing about the transaction', async () => {
    const path = receiptPath(alice.transactionId);
    const refused = async (headers: Record<string, string>, status: number, q = '') => {
      const r = await http('GET', `${path}${q}`, undefined, headers);
      expect(r.status, JSON.stringify(headers)).toBe(status);
      expect(r.headers.get('content-type')).toContain('application/problem+json');
      // A problem, never the receipt or any part of it (the instance echoes the request's URL).
      const { instance: _instance, ...problem } = r.body as Record<string, unknown>;
      expect(JSON.stringify(problem)).not.toContain(alice.referenceId);
      expect(r.body).not.toHaveProperty('proof');
      expect(r.body).not.toHaveProperty('purposes');
    };
    // Bob's browser token: Alice's transaction is unknown to it; naming Alice is forbidden.
    await refused(browser(shop, bob.token), 404);
    await refused(browser(shop, bob.token), 403, `?referenceId=${alice.referenceId}`);
    // Another app, by its secret key or its browser credentials (with Alice's token, too).
    await refused({ 'x-secret-key': other.secretKey }, 404);
    await refused(browser(other, alice.token), 401);
    // Anonymous: nothing, a site key without a token, an origin not on the allowlist.
    await refused({}, 401);
    await refused(browser(shop), 401);
    await refused({ ...browser(shop, alice.token), origin: 'https://evil.example' }, 403);
    await refused({ 'x-secret-key': 'svc_sk_test_wrong' }, 401);
    // An unknown or malformed id is the same 404.
    const unknown = await http(
      'GET',
      receiptPath('0190f000-0000-7000-8000-000000000000'),
      undefined,
      browser(shop, alice.token),
    );
    expect(unknown.status).toBe(404);
  });
});

describe('consent receipts over the portal and record APIs', () => {
  it('the hosted portal’s API gives the principal its own receipt, the same signed document', async () => {
    const keys = keysFromJwks(await publishedKeys());
    const portalToken = (ref: string) =>
      issuePrincipalToken(p.rt.config, { appId: shop.appId, secretVersion: 1 }, ref, {
        kind: 'portal',
        ttlMs: 600_000,
      }).token;
    const mine = `/portal/api/${alice.referenceId}/transactions/${alice.transactionId}/receipt`;
    const r = await http('GET', mine, undefined, {
      authorization: `Portal ${portalToken(alice.referenceId)}`,
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.transactionId).toBe(alice.transactionId);
    expect(verifyReceipt(r.body, keys).ok).toBe(true);
    // Bob's link: not for Alice's path (403), and her transaction is not in his (404).
    const bobAuth = { authorization: `Portal ${portalToken(bob.referenceId)}` };
    expect((await http('GET', mine, undefined, bobAuth)).status).toBe(403);
    const viaBob = `/portal/api/${bob.referenceId}/transactions/${alice.transactionId}/receipt`;
    expect((await http('GET', viaBob, undefined, bobAuth)).status).toBe(404);
    expect((await http('GET', mine)).status).toBe(401);
  });

  it('the record API gives the app the receipt of a user’s current transaction', async () => {
    const keys = keysFromJwks(await publishedKeys());
    const userId = `u-${randomBytes(4).toString('hex')}`;
    await ok(
      http(
        'POST',
        '/api/v1/consents',
        {
          userId,
          email: `${userId}@example.test`,
          consents: { essential: true, marketing: false },
        },
        { authorization: `Bearer ${shop.apiKey}` },
      ),
      201,
    );
    const r = await http('GET', `/api/v1/consents/${userId}/receipt`, undefined, {
      authorization: `Bearer ${shop.apiKey}`,
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ notice: null, method: { via: 'api' }, language: null });
    expect(r.body).not.toHaveProperty('region');
    expect(r.body.history.every((h: { by: string }) => h.by === 'controller')).toBe(true);
    expect(verifyReceipt(r.body, keys).ok).toBe(true);
    // Another app's key knows no such user; no key at all is 401.
    const theirs = await http('GET', `/api/v1/consents/${userId}/receipt`, undefined, {
      authorization: `Bearer ${other.apiKey}`,
    });
    expect(theirs.status).toBe(404);
    expect((await http('GET', `/api/v1/consents/${userId}/receipt`)).status).toBe(401);
  });
});
