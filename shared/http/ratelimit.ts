import { isIP } from 'node:net';
import type { Request, RequestHandler } from 'express';
import { Counter, type Registry } from 'prom-client';
import type { BaseConfig } from '../config.js';
import { keyedHash, type KeyConfig } from '../domain/crypto.js';
import { AppError } from '../errors.js';
import { getOrCreate } from '../metrics.js';
import { locals, type AuthLocals } from './locals.js';

/** Token bucket: `rate` tokens per second up to `burst`. Pure; the clock is passed in. */
export class TokenBucket {
  private tokens: number;
  private last: number;

  constructor(
    private readonly rate: number,
    private readonly burst: number,
    nowMs: number,
  ) {
    this.tokens = burst;
    this.last = nowMs;
  }

  private refill(nowMs: number) {
    this.tokens = Math.min(
      this.burst,
      this.tokens + (Math.max(0, nowMs - this.last) / 1000) * this.rate,
    );
    this.last = Math.max(this.last, nowMs);
  }

  /** Takes one token; returns 0 when allowed, else the ms until one is available. */
  take(nowMs: number): number {
    this.refill(nowMs);
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return 0;
    }
    return this.wait(nowMs);
  }

  /** The ms until a token is available (0: one is), taking nothing. */
  wait(nowMs: number): number {
    this.refill(nowMs);
    return this.tokens >= 1 ? 0 : Math.ceil(((1 - this.tokens) / this.rate) * 1000);
  }
}

/**
 * Token buckets by key, at most `max` of them, the least recently used dropped first. A
 * dropped bucket comes back full, which only favours a caller that has gone quiet for as long
 * as `max` other keys took to arrive; the bound keeps a flood of keys from growing memory.
 */
export class BucketMap {
  private readonly buckets = new Map<string, TokenBucket>();

  constructor(
    private readonly rate: number,
    private readonly burst: number,
    private readonly max = 100_000,
  ) {}

  private get(key: string, nowMs: number): TokenBucket {
    let b = this.buckets.get(key);
    if (b) this.buckets.delete(key);
    else b = new TokenBucket(this.rate, this.burst, nowMs);
    this.buckets.set(key, b);
    if (this.buckets.size > this.max) {
      const oldest = this.buckets.keys().next().value;
      if (oldest !== undefined) this.buckets.delete(oldest);
    }
    return b;
  }

  take(key: string, nowMs: number): number {
    return this.get(key, nowMs).take(nowMs);
  }

  wait(key: string, nowMs: number): number {
    return this.buckets.get(key)?.wait(nowMs) ?? 0;
  }

  get size(): number {
    return this.buckets.size;
  }
}

/**
 * Who is calling, for the budget (docs/security.md, Rate limits): an app's server (secret key), its
 * record or ledger client (API key), a browser (site key, public: anyone can send it), the
 * operator. Each class has its own bucket, so traffic anyone can forge never spends a server's
 * budget.
 */
export type CredentialClass = 'secretKey' | 'apiKey' | 'browser' | 'admin' | 'other';

export function credentialClass(l: AuthLocals): CredentialClass {
  if (l.via === 'secretKey' || l.via === 'apiKey') return l.via;
  if (l.via === 'siteKey') return 'browser';
  if (l.via === 'admin' || l.admin) return 'admin';
  return 'other';
}

/**
 * The address a limit applies to: the client IP as Express sees it (after `trust proxy`);
 * IPv6 by its /64, since one host commonly holds a whole /64.
 */
export function clientAddress(req: Pick<Request, 'ip'>): string {
  const ip = req.ip ?? 'unknown';
  const v4 = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip)?.[1];
  if (v4) return v4;
  if (isIP(ip) !== 6) return ip;
  const [head = '', tail = ''] = ip.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = ip.includes('::')
    ? [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right]
    : left;
  return `${groups
    .slice(0, 4)
    .map((g) => g.toLowerCase().replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}

/** What every limit uses: where its refusals are counted. */
export interface RefusalDeps {
  registry: Registry;
}

/** What `limitAuthFailures` uses; a Runtime is one. */
export interface AuthFailureDeps extends RefusalDeps {
  config: Pick<BaseConfig, 'RATE_LIMIT_AUTH_FAILURE_RPS' | 'RATE_LIMIT_AUTH_FAILURE_BURST'>;
}

/** What `rateLimit` uses; a Runtime is one. */
export interface RateLimitDeps extends RefusalDeps {
  config: KeyConfig &
    Pick<
      BaseConfig,
      | 'RATE_LIMIT_RPS'
      | 'RATE_LIMIT_BURST'
      | 'RATE_LIMIT_CAPTURE_PER_IP_RPS'
      | 'RATE_LIMIT_CAPTURE_PER_IP_BURST'
    >;
}

function refusals(rt: RefusalDeps) {
  return getOrCreate(
    rt.registry,
    'svc_http_rate_limited_total',
    () =>
      new Counter({
        name: 'svc_http_rate_limited_total',
        help: 'Requests refused with 429, by limit (app_class, capture_ip, auth_failures) and credential class',
        labelNames: ['limit', 'class'],
        registers: [rt.registry],
      }),
  );
}

const limited = (detail: string, waitMs: number) =>
  new AppError('SVC_RATE_LIMITED', detail, {
    retryAfterS: Math.max(1, Math.ceil(waitMs / 1000)),
  });

interface Budgets {
  /** By app and credential class (or client address, or the operator). */
  buckets: BucketMap;
  /** Browser writes by app and keyed hash of the client address. */
  perIp: BucketMap;
}

/**
 * One set of budgets per deps object (a process's Runtime): every route of a process spends the
 * same app budget.
 */
const budgetsByDeps = new WeakMap<RateLimitDeps, Budgets>();

function budgets(rt: RateLimitDeps): Budgets {
  let b = budgetsByDeps.get(rt);
  if (!b) {
    const c = rt.config;
    b = {
      buckets: new BucketMap(c.RATE_LIMIT_RPS, c.RATE_LIMIT_BURST),
      perIp: new BucketMap(c.RATE_LIMIT_CAPTURE_PER_IP_RPS, c.RATE_LIMIT_CAPTURE_PER_IP_BURST),
    };
    budgetsByDeps.set(rt, b);
  }
  return b;
}

export interface RateLimitOptions {
  now?: () => number;
  /**
   * Also limit browser (site-key) calls per client IP within the app: for anonymous writes
   * such as the widget's capture, which anyone can send.
   */
  perClientIp?: boolean;
}

/**
 * Per-app rate limit (per process, shared by every route of the process), one budget per app
 * AND credential class (`RATE_LIMIT_RPS`, `RATE_LIMIT_BURST` each). Goes after authentication; callers without an app share a budget
 * per client address, the operator has one of its own. With `perClientIp`, browser calls are
 * first held to `RATE_LIMIT_CAPTURE_PER_IP_*` per app and keyed hash of the client address,
 * so one address cannot spend the app's whole browser budget. Over budget: 429 + Retry-After,
 * and the request is not applied.
 */
export function rateLimit(rt: RateLimitDeps, o: RateLimitOptions = {}): RequestHandler {
  const now = o.now ?? Date.now;
  const c = rt.config;
  const { buckets, perIp } = budgets(rt);
  const refused = refusals(rt);
  return (req, res, next) => {
    const l = locals(res);
    const cls = credentialClass(l);
    const t = now();
    if (o.perClientIp && cls === 'browser' && l.app) {
      const ipKey = `${l.app.appId}|${keyedHash(c, 'ratelimit-ip', clientAddress(req))}`;
      const wait = perIp.take(ipKey, t);
      if (wait > 0) {
        refused.inc({ limit: 'capture_ip', class: cls });
        return next(limited('Rate limit exceeded for this client address', wait));
      }
    }
    const key = l.app
      ? `app|${l.app.appId}|${cls}`
      : cls === 'admin'
        ? 'admin'
        : `ip|${clientAddress(req)}`;
    const wait = buckets.take(key, t);
    if (wait === 0) return next();
    refused.inc({ limit: 'app_class', class: cls });
    next(limited('Rate limit exceeded for this application', wait));
  };
}

/**
 * One failed-authentication budget per deps object (a process's Runtime), shared by every
 * authentication middleware.
 */
const failureBuckets = new WeakMap<AuthFailureDeps, BucketMap>();

/**
 * Limits failed authentications per client address (`RATE_LIMIT_AUTH_FAILURE_RPS` and
 * `…_BURST`): each 401 spends a token; once none is left the address gets 429 with
 * Retry-After, before its credentials are even looked up (a guessing run costs no reads),
 * until the bucket refills. A correct credential from that address waits as well: the
 * address, not the credential, is what is being limited. Wraps an authentication middleware.
 */
export function limitAuthFailures(
  rt: AuthFailureDeps,
  authenticate: RequestHandler,
  now: () => number = Date.now,
): RequestHandler {
  let failures = failureBuckets.get(rt);
  if (!failures) {
    const c = rt.config;
    failures = new BucketMap(c.RATE_LIMIT_AUTH_FAILURE_RPS, c.RATE_LIMIT_AUTH_FAILURE_BURST);
    failureBuckets.set(rt, failures);
  }
  const bucket = failures;
  const refused = refusals(rt);
  return (req, res, next) => {
    const addr = clientAddress(req);
    const blocked = bucket.wait(addr, now());
    if (blocked > 0) {
      refused.inc({ limit: 'auth_failures', class: 'unauthenticated' });
      return next(limited('Too many failed authentications from this address', blocked));
    }
    const fail = (err: unknown) => {
      if (err instanceof AppError && err.code === 'SVC_UNAUTHORIZED') bucket.take(addr, now());
      next(err);
    };
    const proceed = (err?: unknown) =>
      err === undefined || err === 'route' || err === 'router' ? next(err) : fail(err);
    return Promise.resolve()
      .then(() => authenticate(req, res, proceed))
      .catch(fail);
  };
}
