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

/** Retries `fn` on transient errors (100 ms, 200 ms, … apart) up to `tries` times in all. */
export async function withRetries<T>(fn: () => Promise<T>, tries = 3): Promise<T> {
  for (let i = 0; ; i++) {
    try {
      return await fn();
    } catch (err) {
      if (i + 1 >= tries || !coerceError(err).retriable) throw err;
      await new Promise((r) => setTimeout(r, backoffMs(i, { baseMs: 100 })));
    }
  }
}
