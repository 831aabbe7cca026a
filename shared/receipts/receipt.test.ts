import { createPublicKey, verify as edVerify } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { StoredTransaction } from '../domain/consent/model.js';
import type { NoticeVersion } from '../domain/types.js';
import { CHECKPOINT_PURPOSE } from '../ledger/checkpoint.js';
import {
  keyId,
  keysFromJwks,
  parsePrivateKey,
  publicJwk,
  signFor,
  type SigningKey,
} from '../signing/keys.js';
import {
  RECEIPT_PURPOSE,
  receiptContent,
  signReceipt,
  signedText,
  verifyReceipt,
  type ConsentReceipt,
} from './receipt.js';

function keyFrom(seedHex: string): SigningKey {
  const privateKey = parsePrivateKey(seedHex);
  const publicKey = createPublicKey(privateKey);
  return { kid: keyId(publicKey), privateKey, publicKey };
}
const KEY = keyFrom('11'.repeat(32));
const OTHER = keyFrom('22'.repeat(32));
const KEYS = keysFromJwks({ keys: [publicJwk(KEY.publicKey, 'active')] });
const KEYS_URL = 'https://consent.example/.well-known/svc-keys.json';

const notice: NoticeVersion = {
  appId: 'app_1',
  noticeId: 'ntc_01HZZZZZZZZZZZZZZZZZZZZZZZ',
  version: 3,
  kind: 'data_collection',
  triggerKey: 'newsletter_signup',
  defaultLanguage: 'en',
  purposes: [
    { name: 'essential', required: true, dataItems: ['email'] },
    { name: 'marketing', required: false, dataItems: ['email', 'name'] },
  ],
  translations: {
    en: {
      title: 'Newsletter',
      body: 'We use your data for:',
      purposes: {
        essential: { label: 'Sending the newsletter', description: '…' },
        marketing: { label: 'Offers by e-mail', description: '…' },
      },
    },
  },
  validityDays: 365,
  reminderDaysBefore: 30,
  textHash: 'a'.repeat(64),
  createdAt: '2026-01-01T00:00:00.000Z',
};

const txn: StoredTransaction = {
  appId: 'app_1',
  transactionId: '0190f000-0000-7000-8000-000000000001',
  referenceId: 'SVC-REF-ABCD2345',
  processId: 'newsletter_signup',
  noticeId: notice.noticeId,
  noticeVersion: 3,
  language: 'en',
  source: 'widget',
  createdAt: '2026-02-01T10:00:00.000Z',
  updatedAt: '2026-02-03T10:00:00.000Z',
  expiresAt: '2027-02-01T10:00:00.000Z',
  records: [
    {
      recordId: 'r-essential',
      purpose: 'essential',
      state: 'granted',
      updatedAt: '2026-02-01T10:00:00.000Z',
    },
    {
      recordId: 'r-marketing',
      purpose: 'marketing',
      state: 'revoked',
      updatedAt: '2026-02-03T10:00:00.000Z',
    },
  ],
  version: 3,
  sequence: 3,
  proof: {
    noticeVersion: 3,
    textHash: 'a'.repeat(64),
    language: 'en',
    capturedAt: '2026-02-01T10:00:00.000Z',
    pageUrl: 'https://shop.example/signup',
    userAgent: 'test',
    ipHash: 'h',
    mode: 'granular',
    region: 'IN-MH',
  },
  history: [
    {
      recordId: 'r-essential',
      from: null,
      to: 'granted',
      operation: 'create',
      at: '2026-02-01T10:00:00.000Z',
      who: { source: 'widget', credential: 'siteKey' },
    },
    {
      recordId: 'r-marketing',
      from: null,
      to: 'granted',
      operation: 'create',
      at: '2026-02-01T10:00:00.000Z',
      who: { source: 'widget', credential: 'siteKey' },
    },
    {
      recordId: 'r-marketing',
      from: 'granted',
      to: 'revoked',
      operation: 'revoke',
      at: '2026-02-02T10:00:00.000Z',
      who: { source: 'api', credential: 'secretKey' },
    },
    {
      recordId: 'r-marketing',
      from: 'revoked',
      to: 'revoked',
      operation: 'revoke',
      at: '2026-02-03T10:00:00.000Z',
      who: { source: 'portal', credential: 'principalToken' },
    },
  ],
};
const app = { appId: 'app_1', name: 'Shop & Co', contactEmail: 'dpo@shop.example' };
const ISSUED = new Date('2026-03-01T00:00:00.000Z');

const signed = (): ConsentReceipt =>
  signReceipt(KEY, receiptContent(txn, notice, app, ISSUED), KEYS_URL);

// Tampering edits arbitrary fields of the parsed file.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Editable = Record<string, any>;

/** A deep copy changed by `f`, as someone holding the file could. */
function tampered(f: (r: Editable) => void): unknown {
  const copy = JSON.parse(JSON.stringify(signed())) as Editable;
  f(copy);
  return copy;
}

/** RFC 8785 for the values a receipt holds, written independently of shared/domain/ledger/hash.ts. */
function jcs(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(jcs).join(',')}]`;
  if (v !== null && typeof v === 'object')
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${jcs((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(v);
}

describe('receipt content', () => {
  it('holds the notice, purposes with data items, language, region, method, contact and history', () => {
    const r = receiptContent(txn, notice, app, ISSUED);
    expect(r).toMatchObject({
      receiptVersion: 1,
      alignedWith: 'ISO/IEC TS 27560:2023',
      issuedAt: ISSUED.toISOString(),
      transactionId: txn.transactionId,
      referenceId: txn.referenceId,
      controller: { appId: 'app_1', name: 'Shop & Co', contact: { email: 'dpo@shop.example' } },
      notice: {
        noticeId: notice.noticeId,
        version: 3,
        textHash: 'a'.repeat(64),
        processId: 'newsletter_signup',
      },
      language: 'en',
      region: 'IN-MH',
      collectedAt: txn.createdAt,
      method: { via: 'widget', mode: 'granular' },
      status: 'partially_revoked',
      sequence: 3,
      expiresAt: txn.expiresAt,
    });
    expect(r.purposes).toEqual([
      {
        recordId: 'r-essential',
        purpose: 'essential',
        label: 'Sending the newsletter',
        dataItems: ['email'],
        required: true,
        state: 'granted',
        updatedAt: '2026-02-01T10:00:00.000Z',
      },
      {
        recordId: 'r-marketing',
        purpose: 'marketing',
        label: 'Offers by e-mail',
        dataItems: ['email', 'name'],
        required: false,
        state: 'revoked',
        updatedAt: '2026-02-03T10:00:00.000Z',
      },
    ]);
    expect(r.history.map((h) => [h.purpose, h.operation, h.from, h.to, h.by, h.via])).toEqual([
      ['essential', 'create', null, 'granted', 'principal', 'widget'],
      ['marketing', 'create', null, 'granted', 'principal', 'widget'],
      ['marketing', 'revoke', 'granted', 'revoked', 'controller', 'api'],
      ['marketing', 'revoke', 'revoked', 'revoked', 'principal', 'portal'],
    ]);
  });

  it('a record made through the API: no notice, no region, the service’s own changes marked', () => {
    const api: StoredTransaction = {
      ...txn,
      processId: null,
      noticeId: null,
      noticeVersion: null,
      language: null,
      source: 'api',
      history: [
        {
          recordId: 'r-essential',
          from: 'granted',
          to: 'expired',
          operation: 'expire',
          at: '2027-02-01T10:00:00.000Z',
          who: { source: 'api', credential: 'system:timers' },
        },
      ],
    };
    delete api.proof;
    const r = receiptContent(api, undefined, app, ISSUED);
    expect(r.notice).toBeNull();
    expect(r).not.toHaveProperty('region');
    expect(r.method).toEqual({ via: 'api' });
    expect(r.purposes[0]).toMatchObject({ dataItems: [], required: false });
    expect(r.purposes[0]).not.toHaveProperty('label');
    expect(r.history[0]).toMatchObject({ by: 'service', via: 'api', operation: 'expire' });
  });
});

describe('canonical form and signature', () => {
  it('signs the RFC 8785 form of everything but proof.signature', () => {
    expect(
      signedText({ b: 1, a: { d: [1, 'x', true], c: null }, proof: { signature: 's', kid: 'k' } }),
    ).toBe('{"a":{"c":null,"d":[1,"x",true]},"b":1,"proof":{"kid":"k"}}');
    const r = signed();
    const { signature, ...proof } = r.proof;
    expect(signedText(r)).toBe(jcs({ ...r, proof }));
    // Key order in the file does not matter: the canonical form is the same.
    const reordered = Object.fromEntries(Object.entries(r).reverse());
    expect(signedText(reordered)).toBe(signedText(r));
    // An independent Ed25519 check of the documented message, with the key from its JWK.
    const jwk = publicJwk(KEY.publicKey, 'active');
    const pub = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: jwk.x }, format: 'jwk' });
    const message = Buffer.from(`${RECEIPT_PURPOSE}\n${jcs({ ...r, proof })}`, 'utf8');
    expect(edVerify(null, message, pub, Buffer.from(signature, 'base64url'))).toBe(true);
    expect(r.proof).toMatchObject({
      alg: 'EdDSA',
      kid: KEY.kid,
      purpose: RECEIPT_PURPOSE,
      canonicalization: 'RFC8785',
      keys: KEYS_URL,
    });
  });

  it('verifies a receipt as issued, and after a JSON round trip', () => {
    expect(verifyReceipt(signed(), KEYS)).toEqual({ ok: true, kid: KEY.kid });
    expect(verifyReceipt(JSON.parse(JSON.stringify(signed(), null, 2)), KEYS).ok).toBe(true);
  });

  it.each<[string, (r: Editable) => void]>([
    ['a purpose state', (r) => (r.purposes[1].state = 'granted')],
    ['a data item', (r) => r.purposes[1].dataItems.pop()],
    ['the notice text hash', (r) => (r.notice.textHash = 'b'.repeat(64))],
    ['the controller contact', (r) => (r.controller.contact.email = 'x@evil.example')],
    ['a history entry removed', (r) => r.history.splice(2, 1)],
    ['a field added', (r) => (r.note = 'hello')],
    ['the region removed', (r) => delete r.region],
    ['the issue time', (r) => (r.issuedAt = '2030-01-01T00:00:00.000Z')],
    ['the proof’s key URL', (r) => (r.proof.keys = 'https://evil.example/keys.json')],
    ['the signature', (r) => (r.proof.signature = `${r.proof.signature.slice(0, -2)}AA`)],
  ])('fails when %s is changed', (_what, change) => {
    const v = verifyReceipt(tampered(change), KEYS);
    expect(v.ok).toBe(false);
    expect(!v.ok && v.reason).toMatch(/signature does not match/);
  });

  it('names what is wrong: unknown key, no proof, other purpose, not an object', () => {
    const byOther = signReceipt(OTHER, receiptContent(txn, notice, app, ISSUED), KEYS_URL);
    expect(verifyReceipt(byOther, KEYS)).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/not in the public key set/),
    });
    // A kid swapped for a published one: the signature is then checked against that key.
    const swapped = tampered((r) => (r.proof.kid = OTHER.kid));
    expect(
      verifyReceipt(swapped, keysFromJwks({ keys: [publicJwk(OTHER.publicKey, 'active')] })),
    ).toMatchObject({ ok: false });
    expect(
      verifyReceipt(
        tampered((r) => delete r.proof),
        KEYS,
      ),
    ).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/no proof/),
    });
    expect(verifyReceipt([1, 2], KEYS)).toMatchObject({ ok: false });
    expect(verifyReceipt('receipt', KEYS)).toMatchObject({ ok: false });
    expect(verifyReceipt(null, KEYS)).toMatchObject({ ok: false });
    // A checkpoint signature over the same text is no receipt signature (purpose framing).
    const content = receiptContent(txn, notice, app, ISSUED);
    const r = signReceipt(KEY, content, KEYS_URL);
    const forged = {
      ...r,
      proof: { ...r.proof, signature: signFor(KEY, CHECKPOINT_PURPOSE, signedText(r)) },
    };
    expect(verifyReceipt(forged, KEYS).ok).toBe(false);
    expect(
      verifyReceipt(
        tampered((r) => (r.proof.purpose = CHECKPOINT_PURPOSE)),
        KEYS,
      ),
    ).toMatchObject({ ok: false, reason: expect.stringMatching(/unsupported proof/) });
  });
});
