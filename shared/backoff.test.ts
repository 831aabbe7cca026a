import { describe, expect, it } from 'vitest';
import { retryWhileTransient, withRetries } from './backoff.js';
import { AppError } from './errors.js';

const transient = () => new AppError('SVC_UNAVAILABLE', 'store slow');

describe('retryWhileTransient', () => {
  it('keeps trying through transient errors, however many, until it succeeds', async () => {
    let calls = 0;
    const seen: number[] = [];
    const out = await retryWhileTransient(
      async () => {
        if (++calls < 8) throw transient();
        return 'landed';
      },
      { maxMs: 1, onRetry: (_err, tries) => seen.push(tries) },
    );
    expect(out).toBe('landed');
    expect(calls).toBe(8);
    expect(seen).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });

  it('throws a permanent error at once', async () => {
    let calls = 0;
    await expect(
      retryWhileTransient(
        async () => {
          calls++;
          throw new AppError('SVC_VALIDATION_FAILED', 'bad');
        },
        { maxMs: 1 },
      ),
    ).rejects.toThrow('bad');
    expect(calls).toBe(1);
  });

  it('stops with the last error once the signal aborts', async () => {
    const stop = new AbortController();
    let calls = 0;
    await expect(
      retryWhileTransient(
        async () => {
          if (++calls === 3) stop.abort();
          throw transient();
        },
        { maxMs: 1, signal: stop.signal },
      ),
    ).rejects.toThrow('store slow');
    expect(calls).toBe(3);
  });
});

describe('withRetries', () => {
  it('stops retrying once its signal aborts, cutting the wait short', async () => {
    const ac = new AbortController();
    let calls = 0;
    const t0 = Date.now();
    const failed = withRetries(
      async () => {
        // The fourth try would wait 800 ms first: the abort comes during that wait.
        if (++calls === 4) setTimeout(() => ac.abort(), 50);
        throw transient();
      },
      10,
      ac.signal,
    ).catch((e: unknown) => e);
    const err = await failed;
    expect(err).toBeInstanceOf(AppError);
    expect(calls).toBe(4);
    // 100 + 200 + 400 ms of waits, then 50 ms of the 800 ms one.
    expect(Date.now() - t0).toBeLessThan(700 + 50 + 400);
  });

  it('tries no more after an abort, even with tries left', async () => {
    const ac = new AbortController();
    ac.abort();
    let calls = 0;
    await expect(
      withRetries(
        async () => {
          calls++;
          throw transient();
        },
        10,
        ac.signal,
      ),
    ).rejects.toBeInstanceOf(AppError);
    expect(calls).toBe(1);
  });
});
