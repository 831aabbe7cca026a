import { describe, expect, it } from 'vitest';
import { portalLink } from './link.js';
import { signPortalToken, verifyPortalToken } from './token.js';

const KEY_A = Buffer.alloc(32, 1).toString('base64');
const KEY_B = Buffer.alloc(32, 2).toString('base64');
const config = { SVC_ENCRYPTION_KEY: KEY_A, NODE_ENV: 'test' };
const other = { SVC_ENCRYPTION_KEY: KEY_B, NODE_ENV: 'test' };

const appId = 'app_AAAAAAAAAAAAAAAAAAAA';
const referenceId = 'SVC-REF-ABCD2345';
const now = new Date('2025-01-01T00:00:00.000Z');
const later = new Date('2025-01-08T00:00:00.000Z');

const token = () => signPortalToken(config, { appId, referenceId, expiresAt: later });

/** Re-encodes the payload part with a change, keeping the original signature. */
function withPayload(t: string, patch: Record<string, unknown>): string {
  const [v, body, sig] = t.split('.') as [string, string, string];
  const payload = { ...JSON.parse(Buffer.from(body, 'base64url').toString('utf8')), ...patch };
  return `${v}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}.${sig}`;
}

describe('portal tokens', () => {
  it('verifies a fresh token and returns its claims', () => {
    const r = verifyPortalToken(config, token(), now);
    expect(r).toEqual({ ok: true, claims: { appId, referenceId, expiresAt: later } });
  });

  it('is URL-safe', () => {
    expect(token()).toMatch(/^[A-Za-z0-9_.-]+$/);
  });

  it.each([
    ['at the expiry second', later, 'expired'],
    ['after expiry', new Date(later.getTime() + 1), 'expired'],
    ['one second before expiry', new Date(later.getTime() - 1000), undefined],
  ])('%s', (_name, at, reason) => {
    const r = verifyPortalToken(config, token(), at);
    if (reason === undefined) expect(r.ok).toBe(true);
    else expect(r).toEqual({ ok: false, reason, claims: { appId, referenceId, expiresAt: later } });
  });

  it.each([
    ['another referenceId in the payload', { r: 'SVC-REF-ZZZZ2345' }],
    ['another app in the payload', { a: 'app_BBBBBBBBBBBBBBBBBBBB' }],
    ['a later expiry in the payload', { e: Math.floor(later.getTime() / 1000) + 86_400 }],
  ])('refuses %s (tampered payload)', (_name, patch) => {
    expect(verifyPortalToken(config, withPayload(token(), patch), now)).toEqual({
      ok: false,
      reason: 'bad_signature',
    });
  });

  it('refuses a tampered signature', () => {
    const t = token();
    const i = t.length - 10; // inside the signature, away from base64url padding bits
    const forged = `${t.slice(0, i)}${t[i] === 'A' ? 'B' : 'A'}${t.slice(i + 1)}`;
    expect(verifyPortalToken(config, forged, now)).toEqual({
      ok: false,
      reason: 'bad_signature',
    });
  });

  it('refuses a token signed with another key, even an expired one', () => {
    const t = signPortalToken(other, { appId, referenceId, expiresAt: now });
    expect(verifyPortalToken(config, t, later)).toEqual({ ok: false, reason: 'bad_signature' });
    expect(verifyPortalToken(other, t, new Date(now.getTime() - 1000)).ok).toBe(true);
  });

  it.each([
    ['empty', ''],
    ['two parts', 'pt1.abc'],
    ['another version', token().replace(/^pt1/, 'pt2')],
    ['over-long', `pt1.${'a'.repeat(2000)}.b`],
  ])('refuses a malformed token (%s)', (_name, t) => {
    expect(verifyPortalToken(config, t, now)).toEqual({ ok: false, reason: 'malformed' });
  });

  it('refuses to sign claims that are not ids', () => {
    expect(() =>
      signPortalToken(config, { appId, referenceId: 'not-a-ref', expiresAt: later }),
    ).toThrow();
  });
});

describe('portalLink', () => {
  const linkConfig = {
    ...config,
    PUBLIC_BASE_URL: 'https://consent.example/',
    PORTAL_LINK_TTL_MS: 3_600_000,
  };

  it('links to the hosted portal with a token valid for the TTL', () => {
    const url = new URL(portalLink(linkConfig, { appId }, referenceId, now));
    expect(url.origin).toBe('https://consent.example');
    expect(url.pathname).toBe(`/portal/${referenceId}`);
    const t = url.searchParams.get('token') ?? '';
    expect(verifyPortalToken(config, t, now)).toEqual({
      ok: true,
      claims: { appId, referenceId, expiresAt: new Date(now.getTime() + 3_600_000) },
    });
    expect(verifyPortalToken(config, t, new Date(now.getTime() + 3_600_000)).ok).toBe(false);
  });

  it("uses the app's template, every {referenceId} replaced and URL-encoded, no token", () => {
    const app = {
      appId,
      portalUrlTemplate: 'https://shop.example/privacy/{referenceId}?ref={referenceId}',
    };
    expect(portalLink(linkConfig, app, referenceId, now)).toBe(
      `https://shop.example/privacy/${referenceId}?ref=${referenceId}`,
    );
    expect(portalLink(linkConfig, app, 'a b/&c', now)).toBe(
      'https://shop.example/privacy/a%20b%2F%26c?ref=a%20b%2F%26c',
    );
  });
});
