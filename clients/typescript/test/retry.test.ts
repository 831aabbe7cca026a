import { describe, expect, it } from 'vitest';
import { DEFAULT_RETRY, retriableStatus, retryAfterMs, retryDelayMs } from '../src/retry.js';

describe('retry rules', () => {
  it.each([
    [429, true],
    [500, true],
    [502, true],
    [503, true],
    [400, false],
    [401, false],
    [404, false],
    [409, false],
    [422, false],
  ])('status %i is retried: %s', (status, retried) => {
    expect(retriableStatus(status)).toBe(retried);
  });

  it.each([
    ['3', 3000],
    [' 0 ', 0],
    ['Wed, 02 Dec 2026 08:00:10 GMT', 10_000],
    ['Wed, 02 Dec 2026 07:59:00 GMT', 0],
    ['soon', undefined],
    ['', undefined],
  ])('Retry-After %j is %s ms', (header, ms) => {
    expect(retryAfterMs(header, Date.parse('2026-12-02T08:00:00Z'))).toBe(ms);
  });

  it('is absent without a header', () => {
    expect(retryAfterMs(null, 0)).toBeUndefined();
  });

  it('waits a random time within the capped exponential back-off', () => {
    const p = { ...DEFAULT_RETRY, baseDelayMs: 100, maxDelayMs: 1000 };
    expect(retryDelayMs(p, 0, undefined, () => 0)).toBe(0);
    expect(retryDelayMs(p, 0, undefined, () => 0.999)).toBe(99);
    expect(retryDelayMs(p, 2, undefined, () => 0.5)).toBe(200);
    expect(retryDelayMs(p, 10, undefined, () => 0.999)).toBe(999);
  });

  it('waits what Retry-After asks plus at most 10 % jitter, and gives up beyond the limit', () => {
    const p = { ...DEFAULT_RETRY, maxRetryAfterMs: 5000 };
    expect(retryDelayMs(p, 0, 2000, () => 0)).toBe(2000);
    expect(retryDelayMs(p, 0, 2000, () => 0.999)).toBe(2199);
    expect(retryDelayMs(p, 0, 5001, () => 0)).toBeUndefined();
  });
});
