/**
 * Retry rules: which answers are worth another attempt and how long to wait. Pure functions.
 * Network errors, 429 and 5xx are retried; nothing else can change by asking again.
 */
export interface RetryPolicy {
  /** Attempts after the first. */
  retries: number;
  /** The back-off before retry n is a random delay in [0, min(maxDelayMs, baseDelayMs · 2ⁿ)]. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** A Retry-After beyond this is not waited for: the error is thrown. */
  maxRetryAfterMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = {
  retries: 3,
  baseDelayMs: 200,
  maxDelayMs: 5_000,
  maxRetryAfterMs: 60_000,
};

export const retriableStatus = (status: number) => status === 429 || status >= 500;

/** Retry-After (seconds or an HTTP date) in ms from `nowMs`; undefined when absent or unreadable. */
export function retryAfterMs(header: string | null, nowMs: number): number | undefined {
  if (header === null || header.trim() === '') return undefined;
  if (/^\d+$/.test(header.trim())) return Number(header.trim()) * 1000;
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

/**
 * The wait before retry `n` (0 for the first retry): what Retry-After asks, plus up to 10 %
 * jitter so many clients told the same time do not return at once; otherwise full jitter over
 * the capped exponential back-off. Undefined: do not retry (Retry-After too far away).
 */
export function retryDelayMs(
  policy: RetryPolicy,
  n: number,
  retryAfter: number | undefined,
  random: () => number = Math.random,
): number | undefined {
  if (retryAfter !== undefined) {
    if (retryAfter > policy.maxRetryAfterMs) return undefined;
    return retryAfter + Math.floor(random() * retryAfter * 0.1);
  }
  const cap = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** n);
  return Math.floor(random() * cap);
}
