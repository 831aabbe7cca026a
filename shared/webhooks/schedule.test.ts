import { describe, expect, it } from 'vitest';
import {
  MAX_ATTEMPTS,
  baseDelayMs,
  failingTooLong,
  nextStep,
  parseRetryAfter,
  retryDelayMs,
  withJitter,
} from './schedule.js';

const S = 1000;
const H = 3_600_000;
const mid = () => 0.5; // no jitter
const low = () => 0; // -20 %
const high = () => 0.999999; // +20 %

describe('retry schedule', () => {
  it('has 8 attempts: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h', () => {
    expect(MAX_ATTEMPTS).toBe(8);
    const delays = [1, 2, 3, 4, 5, 6, 7, 8].map((n) => baseDelayMs(n));
    expect(delays).toEqual([5 * S, 300 * S, 1800 * S, 2 * H, 5 * H, 10 * H, 10 * H, undefined]);
    expect(baseDelayMs(0)).toBeUndefined();
  });

  it.each([
    [1, 1, 5000],
    [1, 3600, 5000 / 3600],
    [7, 3600, 10_000],
    [4, 0.5, 2 * H], // a scale below 1 never slows the schedule down
  ])('after attempt %i with time scale %d the base delay is %d ms', (n, scale, ms) => {
    expect(baseDelayMs(n, scale)).toBeCloseTo(ms, 6);
  });

  it.each([
    [mid, 5000],
    [low, 4000],
    [high, 6000],
  ])('jitter stays within ±20 %', (random, expected) => {
    expect(withJitter(5000, random)).toBeCloseTo(expected, 0);
  });
});

describe('Retry-After', () => {
  const now = Date.parse('2025-01-01T00:00:00Z');
  it.each([
    ['120', 120_000],
    [' 7 ', 7000],
    ['0', 0],
    ['Wed, 01 Jan 2025 00:00:30 GMT', 30_000],
    ['Tue, 31 Dec 2024 23:00:00 GMT', 0],
    ['-5', undefined],
    ['soon', undefined],
    ['1.5', undefined],
    [undefined, undefined],
  ])('parses %j as %j ms', (value, ms) => {
    expect(parseRetryAfter(value, now)).toBe(ms);
  });

  it.each([
    // [status, Retry-After, expected delay after attempt 1 (5 s base, no jitter)]
    [503, '7', 7000],
    [429, '7', 7000],
    [503, '1', 5000], // below the delay → the delay
    [429, '3600', 10_000], // above 2 × delay → 2 × delay
    [500, '7', 5000], // ignored on other statuses
    [503, undefined, 5000],
    [503, 'garbage', 5000],
  ])('status %i with Retry-After %j waits %i ms', (statusCode, retryAfter, ms) => {
    expect(
      retryDelayMs({
        failedAttempt: 1,
        statusCode,
        retryAfter,
        timeScale: 1,
        nowMs: 0,
        random: mid,
      }),
    ).toBe(ms);
  });

  it('clamps against the jittered delay', () => {
    const r = (random: () => number) =>
      retryDelayMs({
        failedAttempt: 1,
        statusCode: 429,
        retryAfter: '3600',
        timeScale: 1,
        nowMs: 0,
        random,
      });
    expect(r(low)).toBe(8000);
    expect(r(high)).toBe(12_000);
  });

  it('gives no delay after the last attempt', () => {
    expect(
      retryDelayMs({
        failedAttempt: 8,
        statusCode: 503,
        retryAfter: '1',
        timeScale: 1,
        nowMs: 0,
        random: mid,
      }),
    ).toBeUndefined();
  });
});

describe('nextStep', () => {
  const base = { timeScale: 1, nowMs: 0, random: mid };
  it.each([
    [
      '2xx delivers',
      { ok: true, statusCode: 204, attempt: 1, prevStatus: 'pending' },
      { deliveryStatus: 'delivered' },
    ],
    [
      '500 retries',
      { ok: false, statusCode: 500, errorClass: 'http', attempt: 1, prevStatus: 'pending' },
      { deliveryStatus: 'pending', retryInMs: 5000 },
    ],
    [
      'timeout retries',
      { ok: false, errorClass: 'timeout', attempt: 2, prevStatus: 'pending' },
      { deliveryStatus: 'pending', retryInMs: 300_000 },
    ],
    [
      '3xx retries',
      { ok: false, statusCode: 302, errorClass: 'redirect', attempt: 3, prevStatus: 'pending' },
      { deliveryStatus: 'pending', retryInMs: 1_800_000 },
    ],
    [
      '8th failure fails',
      { ok: false, statusCode: 500, errorClass: 'http', attempt: 8, prevStatus: 'pending' },
      { deliveryStatus: 'failed' },
    ],
    [
      '410 disables and fails',
      { ok: false, statusCode: 410, errorClass: 'http', attempt: 1, prevStatus: 'pending' },
      { deliveryStatus: 'failed', disable: 'gone' },
    ],
    [
      'disabled endpoint fails at once',
      { ok: false, errorClass: 'endpoint_disabled', attempt: 1, prevStatus: 'pending' },
      { deliveryStatus: 'failed' },
    ],
    [
      'missing app fails at once',
      { ok: false, errorClass: 'app_missing', attempt: 2, prevStatus: 'pending' },
      { deliveryStatus: 'failed' },
    ],
    [
      'manual resend of a failed dispatch does not restart retries',
      { ok: false, statusCode: 500, errorClass: 'http', attempt: 9, prevStatus: 'failed' },
      { deliveryStatus: 'failed' },
    ],
    [
      'manual resend of a failed dispatch can deliver',
      { ok: true, statusCode: 200, attempt: 9, prevStatus: 'failed' },
      { deliveryStatus: 'delivered' },
    ],
    [
      'failed resend of a delivered dispatch stays delivered',
      { ok: false, errorClass: 'connection', attempt: 2, prevStatus: 'delivered' },
      { deliveryStatus: 'delivered' },
    ],
    [
      'ssrf refusal retries like any failure',
      { ok: false, errorClass: 'ssrf_refused', attempt: 1, prevStatus: 'pending' },
      { deliveryStatus: 'pending', retryInMs: 5000 },
    ],
  ] as const)('%s', (_name, input, expected) => {
    expect(nextStep({ ...base, ...input })).toEqual(expected);
  });
});

describe('failingTooLong', () => {
  const day = 86_400_000;
  it.each([
    [undefined, 10 * day, false],
    [0, 5 * day - 1, false],
    [0, 5 * day, true],
    [day, 7 * day, true],
  ])('failing since %j, now %d → %s', (since, now, expected) => {
    expect(failingTooLong(since, now, 5 * day)).toBe(expected);
  });
});
