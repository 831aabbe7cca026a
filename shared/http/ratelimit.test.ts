import { describe, expect, it } from 'vitest';
import { TokenBucket } from './ratelimit.js';

describe('TokenBucket', () => {
  it('allows a burst, then refills at the rate', () => {
    const b = new TokenBucket(10, 3, 0);
    expect([b.take(0), b.take(0), b.take(0)]).toEqual([0, 0, 0]);
    expect(b.take(0)).toBe(100); // one token per 100 ms at 10/s
    expect(b.take(50)).toBe(50);
    expect(b.take(100)).toBe(0);
  });
  it('never holds more than the burst', () => {
    const b = new TokenBucket(1000, 2, 0);
    b.take(0);
    expect([b.take(60_000), b.take(60_000), b.take(60_000)]).toEqual([0, 0, 1]);
  });
});
