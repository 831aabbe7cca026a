import { z } from 'zod';
import type { BaseConfig } from '../config.js';
import { keyedHash, safeEqual } from '../domain/crypto.js';
import { patterns } from '../domain/ids.js';

/**
 * Hosted-portal tokens (DESIGN §4.G): `pt1.<payload>.<signature>`, where payload is the
 * base64url JSON `{a: appId, r: referenceId, e: expiry in Unix seconds}` and signature the
 * base64url HMAC-SHA256 of `pt1.<payload>` under a key derived from the encryption key for
 * this purpose alone (HKDF, via keyedHash). Stateless: nothing is stored per link, so a link
 * stops working only when it expires or the encryption key changes.
 */

export type PortalKeyConfig = Pick<BaseConfig, 'SVC_ENCRYPTION_KEY' | 'NODE_ENV'>;

export interface PortalClaims {
  appId: string;
  referenceId: string;
  expiresAt: Date;
}

/**
 * Why a token was refused. `expired` is only reported for an authentic token (its claims are
 * returned so the caller can still tell whose it was); anything altered is `bad_signature`.
 */
export type PortalTokenFailure = 'malformed' | 'bad_signature' | 'expired';

export type PortalTokenResult =
  | { ok: true; claims: PortalClaims }
  | { ok: false; reason: 'expired'; claims: PortalClaims }
  | { ok: false; reason: 'malformed' | 'bad_signature' };

const VERSION = 'pt1';
const PURPOSE = 'portal-token:v1';
/** Far above a real token (~150 chars); bounds the work an attacker can ask for. */
const MAX_TOKEN_CHARS = 1024;

const payloadSchema = z.strictObject({
  a: z.string().regex(patterns.appId),
  r: z.string().regex(patterns.referenceId),
  e: z.number().int().positive(),
});

function signature(config: PortalKeyConfig, signed: string): string {
  return Buffer.from(keyedHash(config, PURPOSE, signed), 'hex').toString('base64url');
}

export function signPortalToken(config: PortalKeyConfig, claims: PortalClaims): string {
  const payload = payloadSchema.parse({
    a: claims.appId,
    r: claims.referenceId,
    e: Math.floor(claims.expiresAt.getTime() / 1000),
  });
  const signed = `${VERSION}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}`;
  return `${signed}.${signature(config, signed)}`;
}

export function verifyPortalToken(
  config: PortalKeyConfig,
  token: string,
  now: Date = new Date(),
): PortalTokenResult {
  if (token.length > MAX_TOKEN_CHARS) return { ok: false, reason: 'malformed' };
  const parts = token.split('.');
  if (parts.length !== 3 || parts[0] !== VERSION) return { ok: false, reason: 'malformed' };
  const [, body, sig] = parts as [string, string, string];
  // The signature is checked before the payload is even parsed: nothing unsigned is trusted.
  if (!safeEqual(sig, signature(config, `${VERSION}.${body}`)))
    return { ok: false, reason: 'bad_signature' };
  let raw: unknown;
  try {
    raw = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
  } catch {
    return { ok: false, reason: 'malformed' };
  }
  const p = payloadSchema.safeParse(raw);
  if (!p.success) return { ok: false, reason: 'malformed' };
  const claims: PortalClaims = {
    appId: p.data.a,
    referenceId: p.data.r,
    expiresAt: new Date(p.data.e * 1000),
  };
  if (claims.expiresAt.getTime() <= now.getTime()) return { ok: false, reason: 'expired', claims };
  return { ok: true, claims };
}
