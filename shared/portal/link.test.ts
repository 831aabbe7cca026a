import { describe, expect, it } from 'vitest';
import { verifyPrincipalToken } from '../principal/index.js';
import { portalLink } from './link.js';

const config = {
  SVC_ENCRYPTION_KEY: Buffer.alloc(32, 1).toString('base64'),
  NODE_ENV: 'test',
  PRINCIPAL_TOKEN_KEY_ID: 'k1',
  PRINCIPAL_TOKEN_PREVIOUS_KEY_IDS: '',
  PUBLIC_BASE_URL: 'https://consent.example/',
  PORTAL_LINK_TTL_MS: 3_600_000,
};
const app = { appId: 'app_AAAAAAAAAAAAAAAAAAAA', secretVersion: 2 };
const referenceId = 'SVC-REF-ABCD2345';
const now = new Date('2025-01-01T00:00:00.000Z');

describe('portalLink', () => {
  it('links to the hosted portal with a portal token in the fragment, never the query', () => {
    const url = new URL(portalLink(config, app, referenceId, now));
    expect(url.origin).toBe('https://consent.example');
    expect(url.pathname).toBe(`/portal/${referenceId}`);
    expect(url.search).toBe('');
    const token = new URLSearchParams(url.hash.slice(1)).get('token') ?? '';
    expect(verifyPrincipalToken(config, token, now)).toEqual({
      ok: true,
      claims: {
        keyId: 'k1',
        appId: app.appId,
        referenceId,
        secretVersion: 2,
        kind: 'portal',
        issuedAt: now,
        expiresAt: new Date(now.getTime() + 3_600_000),
      },
    });
    expect(verifyPrincipalToken(config, token, new Date(now.getTime() + 3_600_000)).ok).toBe(false);
  });

  it("uses the app's template: {referenceId} URL-encoded, a token only where {token} asks", () => {
    const own = {
      ...app,
      portalUrlTemplate: 'https://shop.example/p/{referenceId}?r={referenceId}',
    };
    expect(portalLink(config, own, referenceId, now)).toBe(
      `https://shop.example/p/${referenceId}?r=${referenceId}`,
    );
    expect(portalLink(config, own, 'a b/&c', now)).toBe(
      'https://shop.example/p/a%20b%2F%26c?r=a%20b%2F%26c',
    );
    const withToken = {
      ...app,
      portalUrlTemplate: 'https://shop.example/p/{referenceId}#t={token}',
    };
    const link = portalLink(config, withToken, referenceId, now);
    const token = link.split('#t=')[1] ?? '';
    expect(link.startsWith(`https://shop.example/p/${referenceId}#t=svc_pt_`)).toBe(true);
    expect(verifyPrincipalToken(config, decodeURIComponent(token), now)).toMatchObject({
      ok: true,
      claims: { referenceId, kind: 'portal' },
    });
  });
});
