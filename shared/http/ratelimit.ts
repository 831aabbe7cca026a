import type { RequestHandler } from 'express';
import { Counter } from 'prom-client';
import { AppError } from '../errors.js';
import { getOrCreate } from '../metrics.js';
import type { Runtime } from '../runtime.js';
import { locals } from './locals.js';

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

  /** Takes one token; returns 0 when allowed, else the ms until one is available. */
  take(nowMs: number): number {
    this.tokens = Math.min(this.burst, this.tokens + ((nowMs - this.last) / 1000) * this.rate);
    this.last = nowMs;
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return 0;
    }
    return Math.ceil(((1 - this.tokens) / this.rate) * 1000);
  }
}

/**
 * Per-app rate limit (per process). Goes after authentication so the budget is the app's;
 * unauthenticated callers share a budget per client IP. Over budget: 429 + Retry-After,
 * and the request is not applied.
 */
export function rateLimit(rt: Runtime, now: () => number = Date.now): RequestHandler {
  const buckets = new Map<string, TokenBucket>();
  const limited = getOrCreate(
    rt.registry,
    'svc_http_rate_limited_total',
    () =>
      new Counter({
        name: 'svc_http_rate_limited_total',
        help: 'Requests refused with 429 by the per-app rate limit',
        registers: [rt.registry],
      }),
  );
  return (req, res, next) => {
    const key = locals(res).app?.appId ?? `ip:${req.ip ?? 'unknown'}`;
    let bucket = buckets.get(key);
    if (!bucket) {
      bucket = new TokenBucket(rt.config.RATE_LIMIT_RPS, rt.config.RATE_LIMIT_BURST, now());
      buckets.set(key, bucket);
    }
    const waitMs = bucket.take(now());
    if (waitMs === 0) return next();
    limited.inc();
    next(
      new AppError('SVC_RATE_LIMITED', 'Rate limit exceeded for this application', {
        retryAfterS: Math.max(1, Math.ceil(waitMs / 1000)),
      }),
    );
  };
}
