import { randomBytes } from 'node:crypto';
import type { Request, RequestHandler, Response } from 'express';
import { listApiKeys, getApiKeyByValue } from '../../shared/domain/apiKeys.js';
import { getApp, getAppCached } from '../../shared/domain/apps.js';
import { keyedHash, safeEqual } from '../../shared/domain/crypto.js';
import { patterns } from '../../shared/domain/ids.js';
import { AppError } from '../../shared/errors.js';
import { locals } from '../../shared/http/locals.js';
import { limitAuthFailures } from '../../shared/http/ratelimit.js';
import type { Runtime } from '../../shared/runtime.js';

/**
 * Console sessions (docs/security.md, Console sessions). The browser holds only a random
 * session id, in an HttpOnly, SameSite=Strict, Secure `__Host-` cookie on `/` (no sibling
 * subdomain can set or shadow it; browsers keep a Secure cookie over https and on loopback).
 * The server keeps the session in its store (`SessionStore`, by a hash of the id, so a copy of
 * the store holds no usable id) until the session's end, and every read checks the time
 * itself. Sign-out deletes it. A session lasts at most SESSION_TTL_MS and also ends
 * when what it was opened with stops being valid: for the operator, a change of
 * SVC_ADMIN_TOKEN (the item keeps a keyed hash of the token it was opened with); for an API
 * key, its revocation or the loss of the `console` scope (checked on every request).
 */

export const COOKIE = '__Host-svc_console';
export const CONSOLE_PATH = '/console';
/** A session's whole life, from sign-in: a working day. */
export const SESSION_TTL_MS = 8 * 3_600_000;
const ID_RE = /^[A-Za-z0-9_-]{43}$/;

export type Session =
  | { kind: 'admin'; id: string; csrf: string; expiresAtMs: number }
  | {
      kind: 'apiKey';
      id: string;
      csrf: string;
      expiresAtMs: number;
      appId: string;
      apiKeyId: string;
      apiKeyName: string;
    };

/**
 * Who a session acts as, in what the console records (an attestation's `by`, a go-live's): the
 * operator, or the API key by name and id.
 */
export const principalOf = (s: Session): string =>
  s.kind === 'admin' ? 'operator (console)' : `API key “${s.apiKeyName}” (${s.apiKeyId})`;

/** Where sessions are kept (shared/storage/console/sessions.ts); the Runtime's `consoleSessions`. */
export interface SessionStore {
  /** Puts a new session, refused if the id exists, kept until `expiresAtMs`. */
  create(id: string, session: Record<string, unknown>, expiresAtMs: number): Promise<void>;
  /** The session as stored, expired or not. */
  load(id: string): Promise<Record<string, unknown> | undefined>;
  delete(id: string): Promise<void>;
}
const adminHash = (rt: Runtime, token: string) => keyedHash(rt.config, 'console-admin', token);

const sessions = (rt: Runtime): SessionStore => rt.consoleSessions;

type Opened = { kind: 'admin' } | { kind: 'apiKey'; appId: string; apiKeyId: string; name: string };

async function createSession(rt: Runtime, who: Opened, nowMs = Date.now()): Promise<Session> {
  const id = randomBytes(32).toString('base64url');
  const csrf = randomBytes(32).toString('base64url');
  const expiresAtMs = nowMs + SESSION_TTL_MS;
  const base = { csrf, expiresAtMs, createdAt: new Date(nowMs).toISOString() };
  const item =
    who.kind === 'admin'
      ? { ...base, kind: 'admin', adminHash: adminHash(rt, rt.config.SVC_ADMIN_TOKEN ?? '') }
      : {
          ...base,
          kind: 'apiKey',
          appId: who.appId,
          apiKeyId: who.apiKeyId,
          apiKeyName: who.name,
        };
  await sessions(rt).create(id, item, expiresAtMs);
  return who.kind === 'admin'
    ? { kind: 'admin', id, csrf, expiresAtMs }
    : {
        kind: 'apiKey',
        id,
        csrf,
        expiresAtMs,
        appId: who.appId,
        apiKeyId: who.apiKeyId,
        apiKeyName: who.name,
      };
}

export async function deleteSession(rt: Runtime, id: string): Promise<void> {
  await sessions(rt).delete(id);
}

/** The session of this id if it is still valid; an invalid one is deleted on the way. */
export async function readSession(
  rt: Runtime,
  id: string,
  nowMs = Date.now(),
): Promise<Session | undefined> {
  const item = await sessions(rt).load(id);
  if (!item) return undefined;
  const expiresAtMs = Number(item.expiresAtMs);
  const csrf = String(item.csrf);
  let valid = expiresAtMs > nowMs;
  if (valid && item.kind === 'admin') {
    const token = rt.config.SVC_ADMIN_TOKEN;
    valid = token !== undefined && safeEqual(String(item.adminHash), adminHash(rt, token));
    if (valid) return { kind: 'admin', id, csrf, expiresAtMs };
  } else if (valid && item.kind === 'apiKey') {
    const appId = String(item.appId);
    const apiKeyId = String(item.apiKeyId);
    const key = (await listApiKeys(rt, appId)).find((k) => k.id === apiKeyId);
    valid = !!key && key.revokedAt === null && key.scopes.includes('console');
    if (valid && (await getApp(rt, appId)))
      return { kind: 'apiKey', id, csrf, expiresAtMs, appId, apiKeyId, apiKeyName: key!.name };
  }
  await deleteSession(rt, id);
  return undefined;
}

/** The session id the request's cookie carries, if it has the shape of one. */
export function sessionIdOf(req: Request): string | undefined {
  for (const part of (req.get('cookie') ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0 || part.slice(0, eq).trim() !== COOKIE) continue;
    const v = part.slice(eq + 1).trim();
    if (ID_RE.test(v)) return v;
  }
  return undefined;
}

/** `__Host-` requires Secure, `Path=/` and no Domain, so the cookie is Secure however reached. */
function cookie(value: string, maxAgeS: number): string {
  return [
    `${COOKIE}=${value}`,
    'Path=/',
    `Max-Age=${maxAgeS}`,
    'HttpOnly',
    'SameSite=Strict',
    'Secure',
  ].join('; ');
}

export function setSessionCookie(res: Response, s: Session): void {
  res.append('Set-Cookie', cookie(s.id, Math.floor((s.expiresAtMs - Date.now()) / 1000)));
}

export function clearSessionCookie(res: Response): void {
  res.append('Set-Cookie', cookie('', 0));
}

/** What handlers after `requireSession` find on `res.locals.consoleSession`. */
export function sessionOf(res: Response): Session {
  const s = (res.locals as { consoleSession?: Session }).consoleSession;
  if (!s) throw new AppError('SVC_UNAUTHORIZED', 'Sign in to the console');
  return s;
}

/**
 * Loads the session of the cookie. Without a valid one, a page request is sent to the sign-in
 * page and anything else gets 401. The session also decides the rate-limit budget the request
 * spends: the operator's, or the API key's app's (docs/security.md, Rate limits).
 */
export function requireSession(rt: Runtime): RequestHandler {
  return async (req, res, next) => {
    const id = sessionIdOf(req);
    const s = id === undefined ? undefined : await readSession(rt, id);
    if (!s) {
      if (id !== undefined) clearSessionCookie(res);
      if (req.method === 'GET') return res.redirect(303, `${CONSOLE_PATH}/sign-in`);
      return next(new AppError('SVC_UNAUTHORIZED', 'Sign in to the console'));
    }
    (res.locals as { consoleSession?: Session }).consoleSession = s;
    const l = locals(res);
    if (s.kind === 'admin') {
      l.admin = true;
      l.via = 'admin';
    } else {
      const app = await getAppCached(rt, s.appId);
      if (app) l.app = app;
      l.via = 'apiKey';
    }
    next();
  };
}

/**
 * A state-changing request must carry the session's CSRF token, as the form field `_csrf` or
 * the `X-CSRF-Token` header; and when the browser names the page's origin, it must be this
 * one. Refused with 403 problem+json (`SVC_FORBIDDEN`) before anything is done.
 */
export function requireCsrf(rt: Runtime): RequestHandler {
  return (req, res, next) => {
    const s = sessionOf(res);
    const field = (req.body as { _csrf?: unknown } | undefined)?._csrf;
    const given = typeof field === 'string' ? field : req.get('x-csrf-token');
    if (!given || !safeEqual(given, s.csrf) || !sameOrigin(rt, req)) return next(csrfError());
    next();
  };
}

export const csrfError = () =>
  Object.assign(new AppError('SVC_FORBIDDEN', 'A valid CSRF token is required'), {
    csrf: true,
  });

/** True when the request names no Origin, or this service's own (as reached, or as configured). */
export function sameOrigin(rt: Runtime, req: Request): boolean {
  const origin = req.get('origin');
  if (origin === undefined) return true;
  return (
    origin === `${req.protocol}://${req.get('host')}` ||
    origin === new URL(rt.config.PUBLIC_BASE_URL).origin
  );
}

/** At most this long: an admin token or API key, nothing else is ever sent here. */
const MAX_CREDENTIAL = 512;

/**
 * Sign-in with the admin token or an API key holding the `console` scope. Every refusal is the
 * same 401 (an API key without the scope, revoked or unknown, a wrong token), counted by
 * `limitAuthFailures` like every other failed authentication, so an address that keeps guessing
 * gets 429 before its guesses are even looked up.
 */
export function signIn(rt: Runtime): RequestHandler {
  return limitAuthFailures(rt, async (req, res, next) => {
    if (!sameOrigin(rt, req)) return next(csrfError());
    const given = (req.body as { credential?: unknown } | undefined)?.credential;
    const credential = typeof given === 'string' ? given.trim() : '';
    const refused = new AppError('SVC_UNAUTHORIZED', 'The admin token or API key was not accepted');
    if (!credential || credential.length > MAX_CREDENTIAL) return next(refused);
    let who: Opened | undefined;
    const token = rt.config.SVC_ADMIN_TOKEN;
    if (token !== undefined && safeEqual(credential, token)) who = { kind: 'admin' };
    else if (patterns.apiKey.test(credential)) {
      const key = await getApiKeyByValue(rt, credential);
      const ok = key && key.revokedAt === null && key.scopes.includes('console');
      if (ok && (await getAppCached(rt, key.appId)))
        who = { kind: 'apiKey', appId: key.appId, apiKeyId: key.id, name: key.name };
    }
    if (!who) return next(refused);
    // A new sign-in replaces the browser's earlier session rather than leaving it open.
    const previous = sessionIdOf(req);
    if (previous !== undefined) await deleteSession(rt, previous);
    const s = await createSession(rt, who);
    setSessionCookie(res, s);
    rt.log.info(
      s.kind === 'admin'
        ? { console: 'admin' }
        : { console: 'apiKey', appId: s.appId, apiKeyId: s.apiKeyId },
      'console sign-in',
    );
    res.redirect(303, s.kind === 'admin' ? `${CONSOLE_PATH}/` : `${CONSOLE_PATH}/apps/${s.appId}`);
  });
}
