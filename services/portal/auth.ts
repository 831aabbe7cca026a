import type { Request, RequestHandler, Response } from 'express';
import { getAppCached } from '../../shared/domain/apps.js';
import type { App } from '../../shared/domain/types.js';
import { AppError } from '../../shared/errors.js';
import { locals } from '../../shared/http/locals.js';
import { verifyPortalToken } from '../../shared/portal/index.js';
import type { Runtime } from '../../shared/runtime.js';
import { failureStatus, type PortalFailure } from './page.js';

/**
 * Portal authentication: the token from the e-mail link names the app and the principal, so
 * it alone decides which data is reachable. It must be authentic, unexpired and issued for
 * the referenceId in the path; the app comes from the token, never from the request.
 */

export type PortalAccess =
  | { ok: true; app: App; referenceId: string; expiresAt: Date }
  | { ok: false; failure: PortalFailure };

/** `Authorization: Portal <token>`, else `?token=` (the link as mailed). */
export function tokenOf(req: Request): string | undefined {
  const m = /^Portal[ \t]+(\S+)[ \t]*$/i.exec(req.get('authorization') ?? '');
  if (m) return m[1];
  const q = req.query.token;
  return typeof q === 'string' && q !== '' ? q : undefined;
}

export async function checkAccess(
  rt: Runtime,
  token: string | undefined,
  referenceId: string,
  now = new Date(),
): Promise<PortalAccess> {
  if (token === undefined) return { ok: false, failure: 'missing' };
  const v = verifyPortalToken(rt.config, token, now);
  if (!v.ok && v.reason !== 'expired') return { ok: false, failure: 'forged' };
  // Checked before expiry: someone else's link is refused as such, expired or not.
  if (v.claims.referenceId !== referenceId) return { ok: false, failure: 'mismatch' };
  if (!v.ok) return { ok: false, failure: 'expired' };
  const app = await getAppCached(rt, v.claims.appId);
  if (!app) return { ok: false, failure: 'unknown_app' };
  return { ok: true, app, referenceId, expiresAt: v.claims.expiresAt };
}

const DETAILS: Record<PortalFailure, string> = {
  missing: 'A portal token is required (Authorization: Portal <token>)',
  expired: 'The portal link has expired',
  forged: 'The portal token is not valid',
  mismatch: 'The portal token is not valid for this referenceId',
  unknown_app: 'The portal token is not valid',
};

/** The principal a request acts for (set by requirePortalToken). */
export function principalOf(res: Response): string {
  const ref = (res.locals as { portalReferenceId?: string }).portalReferenceId;
  if (ref === undefined) throw new AppError('SVC_UNAUTHORIZED', 'No credentials');
  return ref;
}

/** API middleware: 401 for a missing or expired token, 403 for anything else refused. */
export function requirePortalToken(rt: Runtime): RequestHandler {
  return async (req, res, next) => {
    const ref = typeof req.params.referenceId === 'string' ? req.params.referenceId : '';
    const a = await checkAccess(rt, tokenOf(req), ref);
    if (!a.ok) {
      const status = failureStatus(a.failure);
      if (status === 401) res.setHeader('WWW-Authenticate', 'Portal');
      return next(
        new AppError(status === 401 ? 'SVC_UNAUTHORIZED' : 'SVC_FORBIDDEN', DETAILS[a.failure]),
      );
    }
    // The app goes where the shared middleware (rate limit, idempotency) looks for it.
    locals(res).app = a.app;
    (res.locals as { portalReferenceId?: string }).portalReferenceId = a.referenceId;
    next();
  };
}
