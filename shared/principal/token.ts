import { z } from 'zod';
import type { BaseConfig } from '../config.js';
import { keyedHash, safeEqual } from '../domain/crypto.js';
import { patterns } from '../domain/ids.js';

/**
 * Principal tokens (docs/security.md, Principal tokens): `svc_pt_<payload>.<signature>`, naming one
 * principal (referenceId) of one app for the browser path of the public API, the embedded dashboard
 * and the hosted portal. The payload is base64url JSON; the signature is the base64url HMAC-SHA256
 * of `svc_pt_<payload>` under the key of the key id the payload names, a key derived from
 * SVC_ENCRYPTION_KEY for that id alone (HKDF, via keyedHash). Pure: whether the app's secret was
 * rotated or the principal erased since is decided by `access.ts`.
 */

export type PrincipalKeyConfig = Pick<
  BaseConfig,
  'SVC_ENCRYPTION_KEY' | 'NODE_ENV' | 'PRINCIPAL_TOKEN_KEY_ID' | 'PRINCIPAL_TOKEN_PREVIOUS_KEY_IDS'
>;

/** `browser`: minted by the app's server or the widget; `portal`: put in e-mailed links. */
export type TokenKind = 'browser' | 'portal';

const HOUR_MS = 3_600_000;
/** Longest lifetime of each kind (docs/security.md, Principal tokens). */
export const MAX_TTL_MS: Record<TokenKind, number> = {
  browser: 24 * HOUR_MS,
  portal: 7 * 24 * HOUR_MS,
};

export interface PrincipalClaims {
  keyId: string;
  appId: string;
  referenceId: string;
  /** The app's `secretVersion` when the token was issued: a rotation invalidates the token. */
  secretVersion: number;
  kind: TokenKind;
  issuedAt: Date;
  expiresAt: Date;
}

/**
 * Why a token was refused. Only an authentic token is reported `expired` (with its claims);
 * a token under a key id this process does not accept is `unknown_key`; anything altered is
 * `bad_signature`.
 */
export type TokenFailure = 'malformed' | 'unknown_key' | 'bad_signature' | 'expired';

export type TokenResult =
  | { ok: true; claims: PrincipalClaims }
  | { ok: false; reason: 'expired'; claims: PrincipalClaims }
  | { ok: false; reason: Exclude<TokenFailure, 'expired'> };

export const TOKEN_PREFIX = 'svc_pt_';
/** Far above a real token (~230 chars); bounds the work an unauthenticated caller can ask for. */
const MAX_TOKEN_CHARS = 1024;
const B64URL = /^[A-Za-z0-9_-]+$/;
const keyId = z.string().regex(/^[A-Za-z0-9]{1,16}$/);

/** The payload, in short keys: k key id, a app, r referenceId, s secret version, t kind, i/e ms. */
const payloadSchema = z.strictObject({
  k: keyId,
  a: z.string().regex(patterns.appId),
  r: z.string().regex(patterns.referenceId),
  s: z.number().int().positive(),
  t: z.enum(['b', 'p']),
  i: z.number().int().positive(),
  e: z.number().int().positive(),
});

const KIND_CODE = { browser: 'b', portal: 'p' } as const;

/** The key ids this process accepts: the current one first, then the previous ones. */
export function acceptedKeyIds(config: PrincipalKeyConfig): string[] {
  const previous = config.PRINCIPAL_TOKEN_PREVIOUS_KEY_IDS.split(',').filter(Boolean);
  return [config.PRINCIPAL_TOKEN_KEY_ID, ...previous];
}

function signature(config: PrincipalKeyConfig, kid: string, signed: string): string {
  return Buffer.from(keyedHash(config, `principal-token:${kid}`, signed), 'hex').toString(
    'base64url',
  );
}

export function signPrincipalToken(
  config: PrincipalKeyConfig,
  claims: Omit<PrincipalClaims, 'keyId'>,
): string {
  const ttl = claims.expiresAt.getTime() - claims.issuedAt.getTime();
  if (!(ttl > 0 && ttl <= MAX_TTL_MS[claims.kind]))
    throw new RangeError(
      `a ${claims.kind} token lives more than 0 and at most ${MAX_TTL_MS[claims.kind]} ms`,
    );
  const payload = payloadSchema.parse({
    k: config.PRINCIPAL_TOKEN_KEY_ID,
    a: claims.appId,
    r: claims.referenceId,
    s: claims.secretVersion,
    t: KIND_CODE[claims.kind],
    i: claims.issuedAt.getTime(),
    e: claims.expiresAt.getTime(),
  });
  const signed = `${TOKEN_PREFIX}${Buffer.from(JSON.stringify(payload)).toString('base64url')}`;
  return `${signed}.${signature(config, payload.k, signed)}`;
}

/** The key id a token claims, read before anything is trusted (it only selects the key). */
function claimedKeyId(body: string): string | undefined {
  try {
    const raw = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as { k?: unknown };
    return typeof raw?.k === 'string' ? raw.k : undefined;
  } catch {
    return undefined;
  }
}

export function verifyPrincipalToken(
  config: PrincipalKeyConfig,
  token: string,
  now: Date = new Date(),
): TokenResult {
  if (token.length > MAX_TOKEN_CHARS || !token.startsWith(TOKEN_PREFIX))
    return { ok: false, reason: 'malformed' };
  const parts = token.slice(TOKEN_PREFIX.length).split('.');
  if (parts.length !== 2 || !parts.every((p) => B64URL.test(p)))
    return { ok: false, reason: 'malformed' };
  const [body, sig] = parts as [string, string];
  const kid = claimedKeyId(body);
  if (kid === undefined) return { ok: false, reason: 'malformed' };
  if (!acceptedKeyIds(config).includes(kid)) return { ok: false, reason: 'unknown_key' };
  // The signature is checked before the payload is validated: nothing unsigned is trusted.
  if (!safeEqual(sig, signature(config, kid, `${TOKEN_PREFIX}${body}`)))
    return { ok: false, reason: 'bad_signature' };
  const p = payloadSchema.safeParse(JSON.parse(Buffer.from(body, 'base64url').toString('utf8')));
  if (!p.success) return { ok: false, reason: 'malformed' };
  const kind: TokenKind = p.data.t === 'b' ? 'browser' : 'portal';
  // Signed by us, so only a key shared with an older or misconfigured signer gets here.
  if (p.data.e <= p.data.i || p.data.e - p.data.i > MAX_TTL_MS[kind])
    return { ok: false, reason: 'malformed' };
  const claims: PrincipalClaims = {
    keyId: p.data.k,
    appId: p.data.a,
    referenceId: p.data.r,
    secretVersion: p.data.s,
    kind,
    issuedAt: new Date(p.data.i),
    expiresAt: new Date(p.data.e),
  };
  if (p.data.e <= now.getTime()) return { ok: false, reason: 'expired', claims };
  return { ok: true, claims };
}
