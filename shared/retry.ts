import { coerceError } from './errors.js';

/** Retries `fn` on transient errors (100 ms, 200 ms, … apart) up to `tries` times in all. */
export async function withRetries<T>(fn: () => Promise<T>, tries = 3): Promise<T> {
  for (let i = 0; ; i++) {
    try {
      return await fn();
    } catch (err) {
      if (i + 1 >= tries || !coerceError(err).retriable) throw err;
      await new Promise((r) => setTimeout(r, 100 * 2 ** i));
    }
  }
}
