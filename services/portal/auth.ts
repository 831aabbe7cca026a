import type { Request, RequestHandler, Response } from 'express';
import type { App } from '../../shared/domain/types.js';
import { AppError } from '../../shared/errors.js';
import { locals } from '../../shared/http/locals.js';
import { sendProblem } from '../../shared/http/problem.js';
import { checkPrincipalToken, type AccessFailure } from '../../shared/principal/index.js';
import type { Runtime } from '../../shared/runtime.js';

/**
 * Portal authentication: the principal token from the e-mail link names the app and the
 * principal, so it alone decides which data is reachable. It must be authentic, unexpired,
 * unrevoked (app secret not rotated, principal not erased since) and issued for the
 * referenceId in the path; the app comes from the token, never from the request. The token
 * travels only in `Authorization: Portal <token>`: a token in the query string is refused
 * (it would end up in access logs).
 */

export type PortalFailure = 'missing' | 'expired' | 'ended' | 'forged' | 'mismatch';

export type PortalAccess =
  | { ok: true; app: App; referenceId: string; expiresAt: Date }
  | { ok: false; failure: PortalFailure };

const FROM_ACCESS: Record<AccessFailure, PortalFailure> = {
  missing: 'missing',
  expired: 'expired',
  revoked: 'ended',
  erased: 'ended',
  unknown: 'ended',
  unknown_key: 'ended',
  malformed: 'forged',
  bad_signature: 'forged',
};

/** `Authorization: Portal <token>` (the portal page) or `Bearer <token>` (other clients). */
export function tokenOf(req: Request): string | undefined {
  const m = /^(?:Portal|Bearer)[ \t]+(\S+)[ \t]*$/i.exec(req.get('authorization') ?? '');
  return m?.[1];
}

export async function checkAccess(
  rt: Runtime,
  token: string | undefined,
  referenceId: string,
  now = new Date(),
): Promise<PortalAccess> {
  const a = await checkPrincipalToken(rt, token, now);
  // Checked first: someone else's link is refused as such, whatever else is wrong with it.
  if (a.claims && a.claims.referenceId !== referenceId) return { ok: false, failure: 'mismatch' };
  if (!a.ok) return { ok: false, failure: FROM_ACCESS[a.failure] };
  return { ok: true, app: a.app, referenceId, expiresAt: a.claims.expiresAt };
}

const STATUS: Record<PortalFailure, 401 | 403> = {
  missing: 401,
  expired: 401,
  ended: 401,
  forged: 403,
  mismatch: 403,
};

const DETAILS: Record<PortalFailure, string> = {
  missing: 'A portal token is required (Authorization: Portal <token>)',
  expired: 'The portal link has expired',
  ended: 'The portal link is no longer valid',
  forged: 'The portal token is not valid',
  mismatch: 'The portal token is not valid for this referenceId',
};

/** The principal a request acts for (set by requirePortalToken). */
export function principalOf(res: Response): string {
  const ref = locals(res).principal?.referenceId;
  if (ref === undefined) throw new AppError('SVC_UNAUTHORIZED', 'No credentials');
  return ref;
}

/**
 * API middleware: 401 for a missing, expired or ended token, 403 for a forged one or one of
 * another principal; 400 for a token in the query string, whatever else the request holds.
 */
export function requirePortalToken(rt: Runtime): RequestHandler {
  return async (req, res, next) => {
    // Answered here, with the path alone as `instance`, so the refusal never echoes the token.
    if (req.query.token !== undefined)
      return sendProblem(
        res,
        new AppError(
          'SVC_VALIDATION_FAILED',
          'Send the portal token in the Authorization header, never in the URL',
          { errors: [{ path: '/token', message: 'is not accepted in the query string' }] },
        ),
        `${req.baseUrl}${req.path}`,
      );
    const ref = typeof req.params.referenceId === 'string' ? req.params.referenceId : '';
    const a = await checkAccess(rt, tokenOf(req), ref);
    if (!a.ok) {
      const status = STATUS[a.failure];
      if (status === 401) res.setHeader('WWW-Authenticate', 'Portal');
      return next(
        new AppError(status === 401 ? 'SVC_UNAUTHORIZED' : 'SVC_FORBIDDEN', DETAILS[a.failure]),
      );
    }
    // The app goes where the shared middleware (rate limit, idempotency) looks for it.
    const l = locals(res);
    l.app = a.app;
    l.principal = { referenceId: a.referenceId, expiresAt: a.expiresAt };
    next();
  };
}
