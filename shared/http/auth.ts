import type { Request, RequestHandler, Response } from 'express';
import type { BaseConfig } from '../config.js';
import { getApiKeyByValue, type ApiKeysDeps } from '../domain/apiKeys.js';
import { getAppBySecretKey, getAppBySiteKey, getAppCached, type AppsDeps } from '../domain/apps.js';
import { safeEqual } from '../domain/crypto.js';
import type { ApiKeyScope, App } from '../domain/types.js';
import { AppError } from '../errors.js';
import {
  checkPrincipalToken,
  type AccessFailure,
  type PrincipalAccessDeps,
} from '../principal/index.js';
import { locals } from './locals.js';
import { limitAuthFailures, type AuthFailureDeps } from './ratelimit.js';

/**
 * Authentication middleware (docs/api.md, Areas and credentials; docs/security.md, Threat model and
 * credentials). Every failure is one of a few fixed messages, so a response never tells whether a
 * key exists (for this or another app). Each is wrapped in `limitAuthFailures`: failed attempts are
 * limited per client address.
 */

/**
 * What the middleware uses: the app and API-key stores, the principal tokens' checks, the
 * failed-authentication limit, and `config` (SVC_ADMIN_TOKEN, and what those take); a Runtime
 * is one.
 */
export interface AuthDeps extends AppsDeps, ApiKeysDeps, PrincipalAccessDeps, AuthFailureDeps {
  config: BaseConfig;
}

const unauthorized = (res: Response, detail: string, bearer = false) => {
  if (bearer) res.setHeader('WWW-Authenticate', 'Bearer');
  return new AppError('SVC_UNAUTHORIZED', detail);
};

function bearer(req: Request): string | undefined {
  const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(req.get('authorization') ?? '');
  return m?.[1];
}

/** Operator access: `Authorization: Bearer <SVC_ADMIN_TOKEN>`. */
export function requireAdmin(rt: AuthDeps): RequestHandler {
  return limitAuthFailures(rt, (req, res, next) => {
    const token = rt.config.SVC_ADMIN_TOKEN;
    if (!token)
      return next(
        new AppError('SVC_UNAVAILABLE', 'The admin API is disabled: SVC_ADMIN_TOKEN is not set'),
      );
    const given = bearer(req);
    if (given === undefined || !safeEqual(given, token))
      return next(unauthorized(res, 'A valid admin token is required', true));
    const l = locals(res);
    l.admin = true;
    l.via = 'admin';
    next();
  });
}

/** Record and ledger APIs: `Authorization: Bearer svc_ak_…` holding `scope`. */
export function requireApiKey(rt: AuthDeps, scope: ApiKeyScope): RequestHandler {
  return limitAuthFailures(rt, async (req, res, next) => {
    const given = bearer(req);
    if (given === undefined) return next(unauthorized(res, 'An API key is required', true));
    const key = await getApiKeyByValue(rt, given);
    const app = key && key.revokedAt === null ? await getAppCached(rt, key.appId) : undefined;
    if (!key || !app) return next(unauthorized(res, 'The API key is not valid', true));
    if (!key.scopes.includes(scope))
      return next(new AppError('SVC_FORBIDDEN', `The API key lacks the scope ${scope}`));
    const l = locals(res);
    l.app = app;
    l.apiKey = key;
    l.via = 'apiKey';
    next();
  });
}

async function secretKeyApp(rt: AuthDeps, req: Request): Promise<App | AppError> {
  const given = req.get('x-secret-key') ?? '';
  const app = given ? await getAppBySecretKey(rt, given) : undefined;
  return app ?? new AppError('SVC_UNAUTHORIZED', 'The secret key is not valid');
}

/** Server-to-server calls: `x-secret-key: svc_sk_…` (a rotated-away key fails at once). */
export function requireSecretKey(rt: AuthDeps): RequestHandler {
  return limitAuthFailures(rt, async (req, res, next) => {
    if (!req.get('x-secret-key'))
      return next(unauthorized(res, 'The x-secret-key header is required'));
    const r = await secretKeyApp(rt, req);
    if (r instanceof AppError) return next(r);
    const l = locals(res);
    l.app = r;
    l.via = 'secretKey';
    next();
  });
}

/**
 * CORS for an allowed origin. Credentials are never needed (the site key is a header, not a
 * cookie), hence `false`; `Vary: Origin` is set on every answer so caches keep them apart.
 */
function allowOrigin(res: Response, origin: string) {
  res.setHeader('Access-Control-Allow-Origin', origin);
  res.setHeader('Access-Control-Allow-Credentials', 'false');
  res.setHeader('Access-Control-Expose-Headers', 'Location, Retry-After, Idempotent-Replayed');
}

/** The app of a site key, provided the request's Origin is on its allowlist. */
async function siteKeyApp(
  rt: AuthDeps,
  req: Request,
  res: Response,
  siteKey: string,
): Promise<App> {
  res.vary('Origin');
  const app = await getAppBySiteKey(rt, siteKey);
  if (!app) throw new AppError('SVC_UNAUTHORIZED', 'The site key is not valid');
  const origin = req.get('origin');
  if (!origin || !app.allowedOrigins.includes(origin))
    throw new AppError('SVC_FORBIDDEN', 'This origin is not allowed for this site key');
  allowOrigin(res, origin);
  return app;
}

const TOKEN_REFUSED: Record<AccessFailure, string> = {
  missing: 'A principal token is required: Authorization: Bearer svc_pt_…',
  expired: 'The principal token has expired',
  revoked: 'The principal token is no longer valid',
  erased: 'The principal token is no longer valid',
  malformed: 'The principal token is not valid',
  unknown_key: 'The principal token is not valid',
  bad_signature: 'The principal token is not valid',
  unknown: 'The principal token is not valid',
};

/**
 * Public API (B): `x-secret-key` from a server; from a browser, `X-Site-Key` plus an
 * allowlisted `Origin` (which only name the app: any script can send both) AND a principal
 * token `Authorization: Bearer svc_pt_…` of that app, which names the one principal the call
 * may read or change (`locals.principal`). When a secret key is sent it alone decides.
 */
export function requireSecretOrBrowser(rt: AuthDeps): RequestHandler {
  return limitAuthFailures(rt, async (req, res, next) => {
    const l = locals(res);
    if (req.get('x-secret-key')) {
      const r = await secretKeyApp(rt, req);
      if (r instanceof AppError) return next(r);
      l.app = r;
      l.via = 'secretKey';
      return next();
    }
    const siteKey = req.get('x-site-key');
    if (!siteKey) {
      res.vary('Origin');
      return next(
        new AppError(
          'SVC_UNAUTHORIZED',
          'Send x-secret-key, or X-Site-Key from an allowed origin with a principal token',
        ),
      );
    }
    const app = await siteKeyApp(rt, req, res, siteKey);
    const access = await checkPrincipalToken(rt, bearer(req));
    // A token of another app is as good as none here.
    if (!access.ok || access.app.appId !== app.appId)
      return next(unauthorized(res, TOKEN_REFUSED[access.ok ? 'unknown' : access.failure], true));
    l.app = access.app;
    l.via = 'siteKey';
    l.principal = {
      referenceId: access.claims.referenceId,
      expiresAt: access.claims.expiresAt,
    };
    next();
  });
}

/** Widget calls (D): site key from `X-Site-Key` or `body.siteKey`, Origin on the allowlist. */
export function requireSiteKey(rt: AuthDeps): RequestHandler {
  return limitAuthFailures(rt, async (req, res, next) => {
    const fromBody = (req.body as { siteKey?: unknown } | undefined)?.siteKey;
    const siteKey = req.get('x-site-key') ?? (typeof fromBody === 'string' ? fromBody : undefined);
    if (!siteKey) {
      res.vary('Origin');
      return next(new AppError('SVC_UNAUTHORIZED', 'A site key is required'));
    }
    const l = locals(res);
    l.app = await siteKeyApp(rt, req, res, siteKey);
    l.via = 'siteKey';
    next();
  });
}

const PREFLIGHT_MAX_AGE_S = 600;

/**
 * OPTIONS for the browser-reachable paths (B and D). A preflight never carries the site key
 * (custom headers are only named in Access-Control-Request-Headers), so it cannot be checked
 * against an app's allowlist here. The preflight therefore echoes any Origin; the actual
 * request is checked by requireSiteKey/requireSecretOrBrowser, which refuse (403) before any
 * change and withhold Access-Control-Allow-Origin, so the browser shows the page nothing.
 * `authorization` carries a principal token; `x-secret-key` is deliberately not an allowed
 * header: it must never come from a browser.
 */
export function corsPreflight(_rt: unknown): RequestHandler {
  return (req, res) => {
    res.vary('Origin');
    const origin = req.get('origin');
    if (origin) {
      allowOrigin(res, origin);
      res.setHeader('Access-Control-Allow-Methods', 'GET, POST, OPTIONS');
      res.setHeader(
        'Access-Control-Allow-Headers',
        'authorization, content-type, x-site-key, idempotency-key',
      );
      res.setHeader('Access-Control-Max-Age', String(PREFLIGHT_MAX_AGE_S));
    }
    res.status(204).end();
  };
}
