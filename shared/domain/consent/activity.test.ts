import { describe, expect, it } from 'vitest';
import {
  DAY_MS,
  WARNING_LEAD_MS,
  activityResolutionMs,
  inactivityPlan,
  inactivityStep,
  lastActivityMs,
} from './activity.js';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const live = { slaTimeScale: 1 };

describe('inactivityPlan', () => {
  it('erases a day after the policy (activity is recorded to the day) and warns 3 days before', () => {
    expect(inactivityPlan(T0, 30, live)).toEqual({
      eraseAt: T0 + 31 * DAY_MS,
      warnAt: T0 + 28 * DAY_MS,
    });
  });

  it('a sandbox time scale compresses the whole window', () => {
    const scale = 43_200; // a day is 2 s
    expect(inactivityPlan(T0, 7, { slaTimeScale: scale })).toEqual({
      eraseAt: T0 + 16_000,
      warnAt: T0 + 10_000,
    });
    expect(activityResolutionMs({ slaTimeScale: scale })).toBe(2_000);
    expect(activityResolutionMs(live)).toBe(DAY_MS);
  });
});

describe('inactivityStep', () => {
  const days = 7;
  const { warnAt, eraseAt } = inactivityPlan(T0, days, live);
  it.each([
    ['before the warning', { lastActiveMs: T0 }, warnAt - 1, { do: 'wait', at: warnAt }],
    ['at the warning', { lastActiveMs: T0 }, warnAt, { do: 'warn', eraseAt }],
    [
      'a late warning still leaves the whole lead',
      { lastActiveMs: T0 },
      eraseAt + DAY_MS,
      { do: 'warn', eraseAt: eraseAt + DAY_MS + WARNING_LEAD_MS },
    ],
    [
      'warned: waits out the lead',
      { lastActiveMs: T0, warnedAtMs: warnAt + 5 },
      eraseAt,
      { do: 'wait', at: warnAt + 5 + WARNING_LEAD_MS },
    ],
    [
      'warned and the lead is over',
      { lastActiveMs: T0, warnedAtMs: warnAt },
      warnAt + WARNING_LEAD_MS,
      { do: 'erase' },
    ],
    [
      'a warning older than the last activity does not stand',
      { lastActiveMs: T0 + DAY_MS, warnedAtMs: T0 },
      warnAt,
      { do: 'wait', at: warnAt + DAY_MS },
    ],
  ] as const)('%s', (_name, p, now, step) => {
    expect(inactivityStep(p, days, live, now)).toEqual(step);
  });

  it('never erases sooner than 48 hours after the warning, nor before the policy ran out', () => {
    for (const scale of [1, 60, 3600, 43_200])
      for (const d of [7, 8, 30, 365, 1095]) {
        const app = { slaTimeScale: scale };
        const plan = inactivityPlan(T0, d, app);
        const warned = inactivityStep({ lastActiveMs: T0 }, d, app, plan.warnAt);
        expect(warned.do).toBe('warn');
        const eraseAt = warned.do === 'warn' ? warned.eraseAt : 0;
        expect(eraseAt - plan.warnAt).toBeGreaterThanOrEqual((48 * 3_600_000) / scale);
        expect(eraseAt - T0).toBeGreaterThanOrEqual((d * DAY_MS) / scale);
      }
  });
});

describe('lastActivityMs', () => {
  it('is lastActiveAt, or for principals from before it their last update', () => {
    const at = '2026-02-01T00:00:00.000Z';
    expect(
      lastActivityMs({ createdAt: at, updatedAt: at, lastActiveAt: '2026-03-01T00:00:00.000Z' }),
    ).toBe(Date.parse('2026-03-01T00:00:00.000Z'));
    expect(lastActivityMs({ createdAt: '2026-01-01T00:00:00.000Z', updatedAt: at })).toBe(
      Date.parse(at),
    );
  });
});
