import { describe, expect, it } from 'vitest';
import {
  DEFAULT_RETENTION_DAYS,
  MAX_RETENTION_DAYS,
  MIN_RETENTION_DAYS,
  retainUntil,
  retainUntilFor,
  retentionDaysOf,
} from './retention.js';

const DAY_S = 86_400;

describe('ledger retention', () => {
  it('is never below a year with a 29 February in it', () => {
    expect(MIN_RETENTION_DAYS).toBe(366);
    expect(DEFAULT_RETENTION_DAYS).toBeGreaterThanOrEqual(MIN_RETENTION_DAYS);
    // 1 March 2027 to 1 March 2028 spans 29 February 2028: 366 days.
    const from = Date.parse('2027-03-01T00:00:00.000Z');
    const yearLater = Date.parse('2028-03-01T00:00:00.000Z') / 1000;
    expect(retainUntil(from, MIN_RETENTION_DAYS)).toBeGreaterThanOrEqual(yearLater);
  });

  it.each<[number | undefined, number]>([
    [undefined, DEFAULT_RETENTION_DAYS],
    [366, 366],
    [730, 730],
    [730.9, 730],
    // What an old or hand-edited item holds never shortens the floor or passes the ceiling.
    [30, MIN_RETENTION_DAYS],
    [100_000, MAX_RETENTION_DAYS],
    [Number.NaN, DEFAULT_RETENTION_DAYS],
  ])('an app with ledgerRetentionDays %s keeps its ledger %s days', (days, want) => {
    expect(retentionDaysOf(days === undefined ? {} : { ledgerRetentionDays: days })).toBe(want);
  });

  it('retainUntil is epoch seconds, rounded up, from the write time', () => {
    expect(retainUntil(1_000, 400)).toBe(400 * DAY_S + 1);
    expect(retainUntil(0, 400)).toBe(400 * DAY_S);
    expect(retainUntilFor(undefined, 5_000)).toBe(DEFAULT_RETENTION_DAYS * DAY_S + 5);
    expect(retainUntilFor({ ledgerRetentionDays: 500 }, 0)).toBe(500 * DAY_S);
  });
});
