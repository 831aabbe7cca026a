import { describe, expect, it } from 'vitest';
import {
  MAX_TTL_MS,
  signPrincipalToken,
  verifyPrincipalToken,
  type PrincipalClaims,
} from './token.js';

const KEY_A = Buffer.alloc(32, 1).toString('base64');
const KEY_B = Buffer.alloc(32, 2).toString('base64');
const base = {
  SVC_ENCRYPTION_KEY: KEY_A,
  NODE_ENV: 'test',
  PRINCIPAL_TOKEN_KEY_ID: 'k1',
  PRINCIPAL_TOKEN_PREVIOUS_KEY_IDS: '',
};
const otherKey = { ...base, SVC_ENCRYPTION_KEY: KEY_B };
/** Signs under k2, still accepts k1: a rotation in progress. */
const rotated = { ...base, PRINCIPAL_TOKEN_KEY_ID: 'k2', PRINCIPAL_TOKEN_PREVIOUS_KEY_IDS: 'k1' };
/** Signs and accepts only k2: the rotation finished. */
const retired = { ...base, PRINCIPAL_TOKEN_KEY_ID: 'k2' };

const issuedAt = new Date('2025-01-01T00:00:00.000Z');
const expiresAt = new Date('2025-01-01T01:00:00.000Z');
const claims: Omit<PrincipalClaims, 'keyId'> = {
  appId: 'app_AAAAAAAAAAAAAAAAAAAA',
  referenceId: 'SVC-REF-ABCD2345',
  secretVersion: 3,
  kind: 'browser',
  issuedAt,
  expiresAt,
};
const during = new Date('2025-01-01T00:30:00.000Z');
const token = (c = base, o: Partial<typeof claims> = {}) =>
  signPrincipalToken(c, { ...claims, ...o });

/** Re-encodes the payload with a change, keeping the original signature. */
function withPayload(t: string, patch: Record<string, unknown>): string {
  const [body, sig] = t.slice('svc_pt_'.length).split('.') as [string, string];
  const payload = { ...JSON.parse(Buffer.from(body, 'base64url').toString('utf8')), ...patch };
  return `svc_pt_${Buffer.from(JSON.stringify(payload)).toString('base64url')}.${sig}`;
}

describe('principal tokens', () => {
  it('verify to their claims, with the key id they were signed under', () => {
    const t = token();
    expect(t).toMatch(/^svc_pt_[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
    expect(verifyPrincipalToken(base, t, during)).toEqual({
      ok: true,
      claims: { ...claims, keyId: 'k1' },
    });
  });

  it.each([
    ['one millisecond before expiry', new Date(expiresAt.getTime() - 1), true],
    ['at the expiry', expiresAt, false],
    ['after expiry', new Date(expiresAt.getTime() + 1), false],
  ])('%s', (_name, at, ok) => {
    const r = verifyPrincipalToken(base, token(), at);
    if (ok) expect(r.ok).toBe(true);
    else expect(r).toEqual({ ok: false, reason: 'expired', claims: { ...claims, keyId: 'k1' } });
  });

  it.each([
    ['another referenceId', { r: 'SVC-REF-ZZZZ2345' }],
    ['another app', { a: 'app_BBBBBBBBBBBBBBBBBBBB' }],
    ['another secret version', { s: 4 }],
    ['a later expiry', { e: expiresAt.getTime() + 1 }],
    ['the portal kind', { t: 'p' }],
  ])('refuse %s in the payload (tampered)', (_name, patch) => {
    expect(verifyPrincipalToken(base, withPayload(token(), patch), during)).toEqual({
      ok: false,
      reason: 'bad_signature',
    });
  });

  it('refuse a tampered signature and a token signed with another encryption key', () => {
    const t = token();
    const i = t.length - 10; // inside the signature, away from base64url padding bits
    const forged = `${t.slice(0, i)}${t[i] === 'A' ? 'B' : 'A'}${t.slice(i + 1)}`;
    expect(verifyPrincipalToken(base, forged, during)).toEqual({
      ok: false,
      reason: 'bad_signature',
    });
    const foreign = token(otherKey);
    expect(verifyPrincipalToken(base, foreign, during)).toEqual({
      ok: false,
      reason: 'bad_signature',
    });
    expect(verifyPrincipalToken(otherKey, foreign, during).ok).toBe(true);
  });

  it('key ids: a previous id is accepted during a rotation, an unlisted one is unknown', () => {
    const k1 = token(base);
    const k2 = token(rotated);
    expect(verifyPrincipalToken(rotated, k1, during).ok).toBe(true);
    expect(verifyPrincipalToken(rotated, k2, during)).toMatchObject({
      ok: true,
      claims: { keyId: 'k2' },
    });
    expect(verifyPrincipalToken(retired, k1, during)).toEqual({
      ok: false,
      reason: 'unknown_key',
    });
    expect(verifyPrincipalToken(base, k2, during)).toEqual({ ok: false, reason: 'unknown_key' });
    // Claiming an accepted key id does not help a token signed under another one.
    expect(verifyPrincipalToken(rotated, withPayload(k2, { k: 'k1' }), during)).toEqual({
      ok: false,
      reason: 'bad_signature',
    });
  });

  it.each([
    ['empty', ''],
    ['the prefix alone', 'svc_pt_'],
    ['one part', `svc_pt_${'a'.repeat(40)}`],
    ['three parts', 'svc_pt_a.b.c'],
    ['not base64url', 'svc_pt_a+b.c/d'],
    ['another prefix', token().replace(/^svc_pt_/, 'svc_px_')],
    ['a payload that is not JSON', 'svc_pt_bm90IGpzb24.c2ln'],
    ['over-long', `svc_pt_${'a'.repeat(2000)}.b`],
  ])('refuse a malformed token (%s)', (_name, t) => {
    expect(verifyPrincipalToken(base, t, during)).toEqual({ ok: false, reason: 'malformed' });
  });

  it.each([
    ['a browser token over 24 h', 'browser', MAX_TTL_MS.browser + 1],
    ['a portal token over 7 days', 'portal', MAX_TTL_MS.portal + 1],
    ['an empty lifetime', 'browser', 0],
  ] as const)('are never signed for %s', (_name, kind, ttl) => {
    expect(() => token(base, { kind, expiresAt: new Date(issuedAt.getTime() + ttl) })).toThrow(
      RangeError,
    );
  });

  it('sign the longest lifetimes of each kind, and nothing that is not an id', () => {
    const week = new Date(issuedAt.getTime() + MAX_TTL_MS.portal);
    const p = token(base, { kind: 'portal', expiresAt: week });
    expect(verifyPrincipalToken(base, p, during)).toMatchObject({
      ok: true,
      claims: { kind: 'portal', expiresAt: week },
    });
    expect(() => token(base, { referenceId: 'not-a-ref' })).toThrow();
    expect(() => token(base, { appId: 'app_x' })).toThrow();
  });
});
