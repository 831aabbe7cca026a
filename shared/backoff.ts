import { setTimeout as sleep } from 'node:timers/promises';
import { coerceError } from './errors.js';

export interface Backoff {
  /** The delay after attempt 0, doubling with each attempt. */
  baseMs: number;
  /** The most the delay grows to (before jitter); no cap when absent. */
  maxMs?: number;
  /**
   * None when absent; `'full'`: uniformly between 0 and the delay; a ratio `r` (0.2): uniformly
   * within ±r of the delay, rounded to a whole millisecond.
   */
  jitter?: 'full' | number;
}

/**
 * Exponential back-off: `baseMs * 2 ** attempt`, capped at `maxMs`, then jittered. The exponent
 * stops growing at 20, so endless retries never reach Infinity (or NaN with a zero base).
 */
export function backoffMs(attempt: number, o: Backoff): number {
  const d = Math.min(o.baseMs * 2 ** Math.min(attempt, 20), o.maxMs ?? Infinity);
  if (o.jitter === undefined) return d;
  if (o.jitter === 'full') return d * Math.random();
  return Math.round(d * (1 - o.jitter + Math.random() * 2 * o.jitter));
}

/**
 * Retries `fn` on transient errors (100 ms, 200 ms, … apart) up to `tries` times in all; once
 * `signal` aborts, no more (the last error is thrown, the wait for the next try cut short).
 */
export async function withRetries<T>(
  fn: () => Promise<T>,
  tries = 3,
  signal?: AbortSignal,
): Promise<T> {
  for (let i = 0; ; i++) {
    try {
      return await fn();
    } catch (err) {
      if (i + 1 >= tries || !coerceError(err).retriable || signal?.aborted) throw err;
      await sleep(backoffMs(i, { baseMs: 100 }), undefined, { signal }).catch(() => undefined);
      if (signal?.aborted) throw err;
    }
  }
}

/**
 * Retries `fn` on transient errors, with back-off from 100 ms doubling to `maxMs`, for as long
 * as they last, until `signal` aborts (then the last error is thrown). For a write whose work
 * is done already (a webhook sent) and must not be given up on while the store is only slow.
 */
export async function retryWhileTransient<T>(
  fn: () => Promise<T>,
  o: {
    signal?: AbortSignal | undefined;
    maxMs?: number;
    onRetry?: (err: unknown, tries: number) => void;
  },
): Promise<T> {
  for (let i = 0; ; i++) {
    try {
      return await fn();
    } catch (err) {
      if (!coerceError(err).retriable || o.signal?.aborted) throw err;
      o.onRetry?.(err, i + 1);
      await new Promise((r) =>
        setTimeout(r, backoffMs(i, { baseMs: 100, maxMs: o.maxMs ?? 5_000 })),
      );
      if (o.signal?.aborted) throw err;
    }
  }
}
