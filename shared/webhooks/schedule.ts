import type { DeliveryStatus, ErrorClass } from '../domain/ledger/delivery.js';
/**
 * Pure delivery rules (docs/webhooks.md, Delivery rules and Retry schedule): the retry schedule,
 * jitter, the Retry-After clamp, and what a dispatch becomes after an attempt. No I/O and no clock:
 * callers pass `now` and `random`.
 */

const S = 1000;
const MIN = 60 * S;
const H = 60 * MIN;

/** Delays before attempts 2…8, each counted from the end of the attempt before. */
export const RETRY_DELAYS_MS: readonly number[] = [
  5 * S,
  5 * MIN,
  30 * MIN,
  2 * H,
  5 * H,
  10 * H,
  10 * H,
];
export const MAX_ATTEMPTS = RETRY_DELAYS_MS.length + 1;
export const JITTER = 0.2;

/** Statuses whose Retry-After is honoured (RFC 9110 §10.2.3 names 503 and 3xx; 429 by RFC 6585). */
const RETRY_AFTER_STATUSES = new Set([429, 503]);

/** The un-jittered delay after failed attempt `n` (1-based); undefined when none remain. */
export function baseDelayMs(failedAttempt: number, timeScale = 1): number | undefined {
  const d = RETRY_DELAYS_MS[failedAttempt - 1];
  if (d === undefined || failedAttempt < 1) return undefined;
  return d / Math.max(1, timeScale);
}

/** `ms` moved uniformly within ±JITTER; `random` returns [0, 1). */
export function withJitter(ms: number, random: () => number): number {
  return ms * (1 + JITTER * (2 * random() - 1));
}

/**
 * A Retry-After header as milliseconds from `nowMs`: delay-seconds or an HTTP-date.
 * Undefined when absent or unparseable; never negative.
 */
export function parseRetryAfter(value: string | undefined, nowMs: number): number | undefined {
  if (value === undefined) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * S;
  if (!/[a-z]/i.test(v)) return undefined; // Date.parse accepts bare numbers like "-5"
  const at = Date.parse(v);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - nowMs);
}

export function clamp(x: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, x));
}

export interface RetryInput {
  /** The attempt that just failed (1-based). */
  failedAttempt: number;
  statusCode?: number | undefined;
  retryAfter?: string | undefined;
  /** Sandbox apps run the schedule this many times faster; 1 for live apps. */
  timeScale: number;
  nowMs: number;
  random: () => number;
}

/**
 * Milliseconds until the next attempt, or undefined when the attempts are exhausted. On 429
 * and 503 the receiver's Retry-After is honoured but kept within [delay, 2 × delay], so it can
 * neither make us hammer it nor park a dispatch beyond the schedule.
 */
export function retryDelayMs(i: RetryInput): number | undefined {
  const base = baseDelayMs(i.failedAttempt, i.timeScale);
  if (base === undefined) return undefined;
  const delay = withJitter(base, i.random);
  const asked =
    i.statusCode !== undefined && RETRY_AFTER_STATUSES.has(i.statusCode)
      ? parseRetryAfter(i.retryAfter, i.nowMs)
      : undefined;
  return Math.round(asked === undefined ? delay : clamp(asked, delay, 2 * delay));
}

export interface AttemptOutcome {
  ok: boolean;
  statusCode?: number | undefined;
  errorClass?: ErrorClass | undefined;
  retryAfter?: string | undefined;
}

export interface NextStep {
  deliveryStatus: DeliveryStatus;
  /** Set when another automatic attempt is due. */
  retryInMs?: number;
  /** Set when this outcome disables the endpoint at once. */
  disable?: 'gone';
}

/** Outcomes after which no automatic retry can help. */
const FINAL: ReadonlySet<ErrorClass> = new Set(['endpoint_disabled', 'app_missing']);

/**
 * What a dispatch becomes after attempt `attempt`. `prevStatus` is its status before the
 * attempt: a manual resend of a delivered or failed dispatch is one attempt outside the
 * schedule, so it never starts automatic retries and never un-delivers a dispatch.
 */
export function nextStep(
  o: AttemptOutcome & {
    attempt: number;
    prevStatus: DeliveryStatus;
    timeScale: number;
    nowMs: number;
    random: () => number;
  },
): NextStep {
  if (o.ok) return { deliveryStatus: 'delivered' };
  const settled: DeliveryStatus = o.prevStatus === 'delivered' ? 'delivered' : 'failed';
  if (o.statusCode === 410) return { deliveryStatus: settled, disable: 'gone' };
  if ((o.errorClass && FINAL.has(o.errorClass)) || o.prevStatus !== 'pending')
    return { deliveryStatus: settled };
  const retryInMs = retryDelayMs({
    failedAttempt: o.attempt,
    statusCode: o.statusCode,
    retryAfter: o.retryAfter,
    timeScale: o.timeScale,
    nowMs: o.nowMs,
    random: o.random,
  });
  return retryInMs === undefined
    ? { deliveryStatus: 'failed' }
    : { deliveryStatus: 'pending', retryInMs };
}

/** True when an endpoint failing since `failingSinceMs` has gone `windowMs` without a success. */
export function failingTooLong(
  failingSinceMs: number | undefined,
  nowMs: number,
  windowMs: number,
): boolean {
  return failingSinceMs !== undefined && nowMs - failingSinceMs >= windowMs;
}
