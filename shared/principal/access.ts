import { getAppCached, type AppsDeps } from '../domain/apps.js';
import { loadPrincipal, type RepositoryDeps } from '../storage/consents/repository.js';
import type { App } from '../domain/types.js';
import { AppError } from '../errors.js';
import {
  MAX_TTL_MS,
  signPrincipalToken,
  verifyPrincipalToken,
  type PrincipalClaims,
  type PrincipalKeyConfig,
  type TokenFailure,
  type TokenKind,
} from './token.js';

/**
 * A principal token checked against the store: beyond its signature and expiry, its app must
 * still have the secret version it was issued under (a rotation ends every token of the app,
 * as it ends the old secret key: at once here, within CREDENTIAL_CACHE_TTL_MS elsewhere), and
 * its principal must exist and not have been erased since it was issued (a consistent read,
 * so an erasure ends the principal's tokens at once everywhere).
 */

/**
 * What checking a token uses: the app store (its secret version), the principal's item, and the
 * token keys (`config`, which the app store takes whole); a Runtime is one.
 */
export interface PrincipalAccessDeps extends AppsDeps, RepositoryDeps {}

export type AccessFailure = TokenFailure | 'missing' | 'revoked' | 'erased' | 'unknown';

export type PrincipalAccess =
  | { ok: true; app: App; claims: PrincipalClaims }
  | { ok: false; failure: AccessFailure; claims?: PrincipalClaims };

export async function checkPrincipalToken(
  rt: PrincipalAccessDeps,
  token: string | undefined,
  now: Date = new Date(),
): Promise<PrincipalAccess> {
  if (token === undefined || token === '') return { ok: false, failure: 'missing' };
  const v = verifyPrincipalToken(rt.config, token, now);
  if (!v.ok)
    return v.reason === 'expired'
      ? { ok: false, failure: 'expired', claims: v.claims }
      : { ok: false, failure: v.reason };
  const { claims } = v;
  const [app, principal] = await Promise.all([
    getAppCached(rt, claims.appId),
    loadPrincipal(rt, claims.appId, claims.referenceId),
  ]);
  if (!app || !principal) return { ok: false, failure: 'unknown', claims };
  if (app.secretVersion !== claims.secretVersion) return { ok: false, failure: 'revoked', claims };
  // Tokens issued before (or in the same millisecond as) the erasure are over; a token issued
  // afterwards (e.g. the erasure acknowledgement's portal link) shows what is left.
  const erasedAt = principal.erasedAt === undefined ? NaN : Date.parse(principal.erasedAt);
  if (erasedAt >= claims.issuedAt.getTime()) return { ok: false, failure: 'erased', claims };
  return { ok: true, app, claims };
}

/** A token for `referenceId` of `app`, valid `ttlMs` from `now` (capped by the kind's maximum). */
export function issuePrincipalToken(
  config: PrincipalKeyConfig,
  app: Pick<App, 'appId' | 'secretVersion'>,
  referenceId: string,
  o: { kind: TokenKind; ttlMs: number; now?: Date },
): { token: string; expiresAt: Date } {
  const issuedAt = o.now ?? new Date();
  const expiresAt = new Date(issuedAt.getTime() + Math.min(o.ttlMs, MAX_TTL_MS[o.kind]));
  const token = signPrincipalToken(config, {
    appId: app.appId,
    referenceId,
    secretVersion: app.secretVersion,
    kind: o.kind,
    issuedAt,
    expiresAt,
  });
  return { token, expiresAt };
}

/** The app's server asking for a token: only for a principal of its own (404 otherwise). */
export async function mintPrincipalToken(
  rt: RepositoryDeps & { config: PrincipalKeyConfig },
  app: App,
  referenceId: string,
  ttlMs: number,
): Promise<{ token: string; expiresAt: Date }> {
  const principal = await loadPrincipal(rt, app.appId, referenceId);
  if (!principal) throw new AppError('SVC_NOT_FOUND', 'Unknown referenceId');
  return issuePrincipalToken(rt.config, app, referenceId, { kind: 'browser', ttlMs });
}
