import { afterEach, describe, expect, it, vi } from 'vitest';
import { cached, invalidateCache, type CacheOwner } from './cache.js';

/** Only the config is read by the cache. */
const rt: CacheOwner = { config: { CREDENTIAL_CACHE_TTL_MS: 1_000 } };

afterEach(() => vi.useRealTimers());

describe('cached', () => {
  it('shares one read per key within the TTL and reads again after it', async () => {
    vi.useFakeTimers();
    let reads = 0;
    const load = () => Promise.resolve(++reads);
    const key = `plain:${Math.random()}`;
    expect(await Promise.all([cached(rt, key, load), cached(rt, key, load)])).toEqual([1, 1]);
    vi.advanceTimersByTime(1_001);
    expect(await cached(rt, key, load)).toBe(2);
  });

  it('renews a value used in its last quarter of life behind, so steady use never waits', async () => {
    vi.useFakeTimers();
    let reads = 0;
    const load = () => Promise.resolve(++reads);
    const key = `renew:${Math.random()}`;
    expect(await cached(rt, key, load)).toBe(1);
    vi.advanceTimersByTime(500);
    expect(await cached(rt, key, load)).toBe(1);
    expect(reads).toBe(1); // half its life left: no read yet
    vi.advanceTimersByTime(300);
    // In its last quarter: it answers, and one read starts behind it (not one per caller).
    expect(await Promise.all([cached(rt, key, load), cached(rt, key, load)])).toEqual([1, 1]);
    expect(reads).toBe(2);
    // Past the first entry's expiry the renewed one answers at once, with no further read.
    vi.advanceTimersByTime(300);
    expect(await cached(rt, key, load)).toBe(2);
    expect(reads).toBe(2);
  });

  it('never answers a value read more than one TTL ago: past expiry callers wait for the renewal', async () => {
    vi.useFakeTimers();
    let reads = 0;
    let release: (v: number) => void = () => undefined;
    const load = () => {
      reads++;
      return reads === 1 ? Promise.resolve(1) : new Promise<number>((r) => (release = r));
    };
    const key = `slow:${Math.random()}`;
    await cached(rt, key, load);
    vi.advanceTimersByTime(900);
    expect(await cached(rt, key, load)).toBe(1); // starts the renewal, still pending
    vi.advanceTimersByTime(200);
    let answered: number | undefined;
    const waiting = cached(rt, key, load).then((v) => (answered = v));
    await Promise.resolve();
    expect(answered).toBeUndefined(); // the expired value is not answered
    release(2);
    await waiting;
    expect(answered).toBe(2);
    expect(reads).toBe(2); // the caller joined the renewal, no third read
  });

  it('does not renew misses early: an unknown key is read once per TTL', async () => {
    vi.useFakeTimers();
    let reads = 0;
    const load = () => (reads++, Promise.resolve(undefined));
    const key = `unknown:${Math.random()}`;
    await cached(rt, key, load);
    vi.advanceTimersByTime(900);
    expect(await cached(rt, key, load)).toBeUndefined();
    expect(reads).toBe(1);
  });

  it('refresh ahead: answers from an entry expired under one TTL ago and replaces it behind', async () => {
    vi.useFakeTimers();
    let reads = 0;
    const load = () => Promise.resolve(++reads);
    const key = `ahead:${Math.random()}`;
    expect(await cached(rt, key, load, { refreshAhead: true })).toBe(1);
    vi.advanceTimersByTime(1_500);
    // Expired: the old value answers at once (to both callers); one read starts.
    const both = [
      cached(rt, key, load, { refreshAhead: true }),
      cached(rt, key, load, { refreshAhead: true }),
    ];
    expect(await Promise.all(both)).toEqual([1, 1]);
    expect(reads).toBe(2);
    // Once that read is in, it answers.
    expect(await cached(rt, key, load, { refreshAhead: true })).toBe(2);
    expect(reads).toBe(2);
  });

  it('refresh ahead never answers from an entry expired more than one TTL ago', async () => {
    vi.useFakeTimers();
    let reads = 0;
    const load = () => Promise.resolve(++reads);
    const key = `old:${Math.random()}`;
    await cached(rt, key, load, { refreshAhead: true });
    vi.advanceTimersByTime(2_001);
    expect(await cached(rt, key, load, { refreshAhead: true })).toBe(2);
  });

  it('refresh ahead never answers from before an invalidation', async () => {
    vi.useFakeTimers();
    let reads = 0;
    const load = () => Promise.resolve(++reads);
    const key = `inv:${Math.random()}`;
    await cached(rt, key, load, { refreshAhead: true });
    vi.advanceTimersByTime(1_200);
    invalidateCache();
    expect(await cached(rt, key, load, { refreshAhead: true })).toBe(2);
  });

  it('a flood of unknown keys never pushes a real credential out', async () => {
    vi.useFakeTimers(); // the clock stands still: nothing expires during the flood
    let reads = 0;
    const real = `real:${Math.random()}`;
    const load = () => Promise.resolve({ appId: 'app', read: ++reads });
    expect(await cached(rt, real, load)).toEqual({ appId: 'app', read: 1 });
    // More random misses than either bound holds, all within the TTL.
    const flood = Array.from({ length: 25_000 }, (_, i) =>
      cached(rt, `random:${i}:${Math.random()}`, () => Promise.resolve(undefined)),
    );
    expect((await Promise.all(flood)).every((v) => v === undefined)).toBe(true);
    expect(await cached(rt, real, load)).toEqual({ appId: 'app', read: 1 });
    expect(reads).toBe(1);
  });

  it('a miss is cached, and a later value for the key is found', async () => {
    vi.useFakeTimers();
    const stored: { value?: string } = {};
    let reads = 0;
    const key = `miss:${Math.random()}`;
    const load = () => (reads++, Promise.resolve(stored.value));
    expect(await cached(rt, key, load)).toBeUndefined();
    stored.value = 'created';
    expect(await cached(rt, key, load)).toBeUndefined();
    expect(reads).toBe(1);
    vi.advanceTimersByTime(1_001);
    expect(await cached(rt, key, load)).toBe('created');
  });
});
