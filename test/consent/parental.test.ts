import { randomBytes } from 'node:crypto';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { adminService } from '../../services/admin/index.js';
import { consentsService } from '../../services/consents/index.js';
import { publicApiService } from '../../services/public-api/index.js';
import { widgetService } from '../../services/widget/index.js';
import type { ConsentEvent } from '../../shared/domain/consent/index.js';
import { keys } from '../../shared/storage/consents/repository.js';
import type { RunningProcess } from '../../bin/process.js';
import { dispatcherWorker } from '../../workers/dispatcher/index.js';
import { relayWorker } from '../../workers/relay/index.js';
import { client } from '../admin/client.js';
import { startReceiver, type Receiver } from '../dispatch/helpers.js';
import { testProcess } from '../helpers/stack.js';
import { noticeBody, ORIGIN } from './fixture.js';

/**
 * Verifiable parental consent against the real stack: widget capture under a notice that
 * requires it, the webhooks delivered to a loopback receiver (signatures checked with
 * `standardwebhooks`), the app's confirmation through the record API, and the gate that keeps
 * every other route from granting before it.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are asserted field by field
type Body = any;

const token = `parental-admin-${randomBytes(12).toString('hex')}`;
let p: RunningProcess;
let rcv: Receiver;

interface Shop {
  appId: string;
  siteKey: string;
  secretKey: string;
  /** consents:read + consents:write */
  key: string;
  writeOnlyKey: string;
  readOnlyKey: string;
}
let shop: Shop;
let other: Shop;

/** Any call to the process; no answer may be a 5xx. */
async function call(
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: unknown,
) {
  const r = await client(p.url)(method, path, body, headers);
  expect(r.status, `${method} ${path} → ${JSON.stringify(r.body)}`).toBeLessThan(500);
  return r;
}

async function admin(method: string, path: string, body?: unknown) {
  const r = await call(method, `/api/v1/admin${path}`, { authorization: `Bearer ${token}` }, body);
  expect(r.status, JSON.stringify(r.body)).toBeLessThan(300);
  return r.body;
}

async function createShop(name: string): Promise<Shop> {
  const created = await admin('POST', '/apps', {
    name,
    environment: 'sandbox',
    webhookUrl: rcv.url(`/hooks/${name}`),
    allowedOrigins: [ORIGIN],
    contactEmail: 'dpo@shop.example',
  });
  const appId = created.app.appId as string;
  const key = async (scopes: string[]) =>
    (await admin('POST', `/apps/${appId}/api-keys`, { name: scopes.join('+'), scopes }))
      .key as string;
  const kids = await admin('POST', `/apps/${appId}/notices`, {
    ...noticeBody('kids_signup', [{ name: 'essential', required: true }, { name: 'games' }]),
    requiresParentalConsent: true,
  });
  expect(kids.requiresParentalConsent).toBe(true);
  await admin(
    'POST',
    `/apps/${appId}/notices`,
    noticeBody('newsletter_signup', [{ name: 'newsletter' }]),
  );
  return {
    appId,
    siteKey: created.siteKey,
    secretKey: created.secretKey,
    key: await key(['consents:read', 'consents:write']),
    writeOnlyKey: await key(['consents:write']),
    readOnlyKey: await key(['consents:read']),
  };
}

beforeAll(async () => {
  rcv = await startReceiver();
  p = await testProcess(
    'parental',
    [adminService, consentsService, publicApiService, widgetService],
    [relayWorker, dispatcherWorker],
    { SVC_ADMIN_TOKEN: token, WEBHOOK_TIMEOUT_MS: '2000' },
  );
  shop = await createShop('shop');
  other = await createShop('other');
});
afterAll(async () => {
  rcv?.releaseAll();
  await p?.close();
  await rcv?.close();
});

const capture = (s: Shop, processId: string, purposes: string[]) =>
  call(
    'POST',
    '/api/v1/widget/capture',
    { 'x-site-key': s.siteKey, origin: ORIGIN, 'user-agent': 'ParentalTest/1.0' },
    {
      siteKey: s.siteKey,
      processId,
      mode: 'granular',
      purposes,
      language: 'en',
      pageUrl: 'https://shop.example/kids',
    },
  );

const verify = (s: Shop, consentId: string, body: Record<string, unknown>, key = s.key) =>
  call(
    'POST',
    `/api/v1/consents/transactions/${consentId}/parental-verification`,
    { authorization: `Bearer ${key}` },
    body,
  );

const verified = () => ({
  outcome: 'verified',
  method: 'digilocker',
  reference: `dl-${randomBytes(6).toString('hex')}`,
  verifiedAt: new Date().toISOString(),
});

const asSecret = (s: Shop) => ({ 'x-secret-key': s.secretKey });

/** The webhooks the app received for a principal, each signature checked independently. */
function hooksOf(s: Shop, referenceId: string): ConsentEvent[] {
  const wh = new Webhook(Buffer.from(s.secretKey), { format: 'raw' });
  return rcv
    .at(`/hooks/${s === shop ? 'shop' : 'other'}`)
    .map((r) => {
      const headers = Object.fromEntries(Object.entries(r.headers).map(([k, v]) => [k, String(v)]));
      return wh.verify(r.body, headers) as ConsentEvent;
    })
    .filter((e) => e.data.referenceId === referenceId);
}

const waitForHook = (s: Shop, referenceId: string, type: ConsentEvent['type'], count = 1) =>
  vi.waitFor(
    () => {
      const found = hooksOf(s, referenceId).filter((e) => e.type === type);
      expect(found.length, `${type} webhooks for ${referenceId}`).toBe(count);
      return found;
    },
    { timeout: 15_000, interval: 50 },
  );

async function storedTxn(s: Shop, referenceId: string, id: string) {
  const r = await p.rt.dynamo.doc.send(
    new GetCommand({
      TableName: p.rt.tables.entities,
      Key: keys.transaction(s.appId, referenceId, id),
      ConsistentRead: true,
    }),
  );
  return r.Item!;
}

describe('verifiable parental consent', () => {
  it('a capture under the notice grants nothing and asks the app, by webhook, to verify', async () => {
    const c = await capture(shop, 'kids_signup', ['essential', 'games']);
    expect(c.status).toBe(201);
    expect(c.body.parentalVerification).toBe('pending');
    const { consentId, referenceId } = c.body;

    const txn = await call(
      'GET',
      `/api/public/consents/my-transactions/${consentId}`,
      asSecret(shop),
    );
    expect(txn.body).toMatchObject({
      status: 'pending',
      parentalVerification: { status: 'pending' },
    });
    expect(txn.body.records.map((r: Body) => [r.purpose, r.state])).toEqual([
      ['essential', 'pending'],
      ['games', 'pending'],
    ]);

    const [required] = await waitForHook(
      shop,
      referenceId,
      'consent.parental_verification_required',
    );
    expect(required!.data).toMatchObject({
      consentId,
      purposes: { essential: false, games: false },
    });
    expect(required!.data.postback).toBeUndefined();
    const [created] = await waitForHook(shop, referenceId, 'consent.created');
    expect(created!.data.purposes).toEqual({ essential: false, games: false });
    // Both of the capture's write, in the order they were published.
    expect([created!.data.sequence, required!.data.sequence]).toEqual([1, 2]);
    expect(required!.data.state).toEqual({ essential: 'pending', games: 'pending' });
    expect(hooksOf(shop, referenceId).some((e) => e.type === 'consent.granted')).toBe(false);

    // No other route grants it: neither the app's secret key nor the record API linking it.
    const grant = await call(
      'POST',
      `/api/public/consents/my-transactions/${consentId}/grant`,
      asSecret(shop),
      {},
    );
    expect(grant.status).toBe(409);
    expect(grant.body.code).toBe('SVC_CONFLICT');
    const link = await call(
      'POST',
      '/api/v1/consents',
      { authorization: `Bearer ${shop.key}` },
      {
        userId: `kid-${randomBytes(4).toString('hex')}`,
        email: 'parent@example.test',
        consents: { games: true },
        consentId,
      },
    );
    expect(link.status).toBe(409);
    // A capture under an ordinary notice is granted at once, as ever.
    const plain = await capture(shop, 'newsletter_signup', ['newsletter']);
    expect(plain.body.parentalVerification).toBeUndefined();
    await waitForHook(shop, plain.body.referenceId, 'consent.granted');
  });

  it('the confirmation grants every pending purpose in one write, with consent.granted; a repeat changes nothing', async () => {
    const c = await capture(shop, 'kids_signup', ['essential', 'games']);
    const { consentId, referenceId } = c.body;
    const body = verified();
    const r = await verify(shop, consentId, body);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({
      transactionId: consentId,
      status: 'active',
      parentalVerification: {
        status: 'verified',
        method: 'digilocker',
        verifiedAt: body.verifiedAt,
      },
    });
    expect(r.body.records.map((x: Body) => x.state)).toEqual(['granted', 'granted']);

    const [granted] = await waitForHook(shop, referenceId, 'consent.granted');
    expect(granted!.data.purposes).toEqual({ essential: true, games: true });
    expect(granted!.data.sequence).toBe(3);
    expect(granted!.data.state).toEqual({ essential: 'granted', games: 'granted' });
    // One write: the item moved one version, both records changed at the same instant.
    const item = await storedTxn(shop, referenceId, consentId);
    expect(item.version).toBe(2);
    expect(item.parental).toMatchObject({ status: 'verified', reference: body.reference });
    const verifies = (item.history as Body[]).filter((h) => h.operation === 'verify');
    expect(verifies).toHaveLength(2);
    expect(new Set(verifies.map((h) => h.at)).size).toBe(1);

    const again = await verify(shop, consentId, verified());
    expect(again.status).toBe(200);
    expect(again.body).toEqual(r.body);
    const refused = await verify(shop, consentId, {
      ...verified(),
      outcome: 'failed',
      remark: 'token rejected',
    });
    expect(refused.status).toBe(409);
    // A later change's event arrives after anything the repeat could have emitted.
    const revoke = await call(
      'POST',
      `/api/public/consents/my-transactions/${consentId}/revoke`,
      asSecret(shop),
      {},
    );
    expect(revoke.status).toBe(200);
    await waitForHook(shop, referenceId, 'consent.withdrawn');
    expect(hooksOf(shop, referenceId).filter((e) => e.type === 'consent.granted')).toHaveLength(1);
    // Verified once, the parent's consent lets the purposes be granted again as usual.
    const regrant = await call(
      'POST',
      `/api/public/consents/my-transactions/${consentId}/grant`,
      asSecret(shop),
      {},
    );
    expect(regrant.status).toBe(200);
  });

  it('another app cannot confirm; bad bodies, wrong scopes and ordinary captures are refused', async () => {
    const c = await capture(shop, 'kids_signup', ['essential']);
    const { consentId } = c.body;
    expect((await verify(other, consentId, verified())).status).toBe(404);
    expect((await verify(shop, consentId, verified(), shop.readOnlyKey)).status).toBe(403);
    const noRef = await verify(shop, consentId, { ...verified(), reference: undefined });
    expect(noRef.status).toBe(422);
    expect(noRef.body.errors).toEqual([
      { path: '/reference', message: 'is required when the outcome is verified' },
    ]);
    const future = await verify(shop, consentId, {
      ...verified(),
      verifiedAt: new Date(Date.now() + 3_600_000).toISOString(),
    });
    expect(future.status).toBe(422);
    expect(
      (await verify(shop, consentId, { ...verified(), outcome: 'failed', reference: undefined }))
        .status,
    ).toBe(422);
    expect((await verify(shop, consentId, { ...verified(), method: 'selfie' })).status).toBe(422);
    const plain = await capture(shop, 'newsletter_signup', ['newsletter']);
    expect((await verify(shop, plain.body.consentId, verified())).status).toBe(409);
    // Still pending after all that; a write-only key gets a receipt, never the records.
    const ok = await verify(shop, consentId, verified(), shop.writeOnlyKey);
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({
      transactionId: consentId,
      referenceId: c.body.referenceId,
      parentalVerification: expect.objectContaining({ status: 'verified' }),
    });
  });

  it('a failed verification refuses the pending purposes, and nothing can be granted after it', async () => {
    const c = await capture(shop, 'kids_signup', ['essential', 'games']);
    const { consentId, referenceId } = c.body;
    const r = await verify(shop, consentId, {
      outcome: 'failed',
      method: 'digilocker',
      verifiedAt: new Date().toISOString(),
      remark: 'the DigiLocker token did not match a parent',
    });
    expect(r.status).toBe(200);
    expect(r.body.parentalVerification).toMatchObject({ status: 'failed' });
    expect(r.body.records.map((x: Body) => x.state)).toEqual(['denied', 'denied']);
    expect((await verify(shop, consentId, verified())).status).toBe(409);
    const grant = await call(
      'POST',
      `/api/public/consents/my-transactions/${consentId}/grant`,
      asSecret(shop),
      {},
    );
    expect(grant.status).toBe(409);
    // The erase that follows is the one ordered after everything above.
    const erase = await call(
      'POST',
      `/api/public/consents/my-transactions/${consentId}/erase`,
      asSecret(shop),
      {},
    );
    expect(erase.status).toBe(200);
    await waitForHook(shop, referenceId, 'data.deleted');
    expect(hooksOf(shop, referenceId).some((e) => e.type === 'consent.granted')).toBe(false);
  });
});
