import { describe, expect, it } from 'vitest';
import { dutyDeadlines, dutyFlag, nextDutyCheck, type DutyFacts } from './clock.js';
import { flagChangeAt, gaugeMoves } from '../../storage/duties/store.js';

const H = 3_600_000;
const DAY = 24 * H;
const t0 = Date.parse('2030-01-01T00:00:00.000Z');

describe('dutyDeadlines', () => {
  it.each([
    ['grievance, 90 days', 90 * DAY, 1, t0 + 90 * DAY, t0 + 72 * DAY],
    ['grievance, 30 days', 30 * DAY, 1, t0 + 30 * DAY, t0 + 24 * DAY],
    ['Board report, 72 h', 72 * H, 1, t0 + 72 * H, t0 + 57.6 * H],
    ['Board report, sandbox scale 3600', 72 * H, 3600, t0 + 72_000, t0 + 57_600],
    ['a scale below 1 counts as 1', 72 * H, 0.5, t0 + 72 * H, t0 + 57.6 * H],
  ])('%s', (_n, window, scale, dueAt, atRiskAt) => {
    expect(dutyDeadlines(t0, window, scale)).toEqual({ dueAt, atRiskAt });
  });
});

const d: DutyFacts = { atRiskAt: t0 + 80, dueAt: t0 + 100 };

describe('dutyFlag', () => {
  it.each([
    ['open, time left', d, t0 + 79, null, null],
    ['open, at the at-risk mark', d, t0 + 80, 'at_risk', 'near_deadline'],
    ['open, at the deadline itself (still on time)', d, t0 + 100, 'at_risk', 'near_deadline'],
    ['open, past the deadline', d, t0 + 101, 'breach', 'deadline_passed'],
    ['done early', { ...d, doneAt: t0 + 10 }, t0 + 500, 'ok', 'done_on_time'],
    ['done while at risk', { ...d, doneAt: t0 + 90 }, t0 + 500, 'ok', 'done_on_time'],
    ['done exactly at the deadline', { ...d, doneAt: t0 + 100 }, t0 + 500, 'ok', 'done_on_time'],
    ['done late stays a breach', { ...d, doneAt: t0 + 101 }, t0 + 500, 'breach', 'done_late'],
    [
      'done after now (replay) does not count yet',
      { ...d, doneAt: t0 + 95 },
      t0 + 85,
      'at_risk',
      'near_deadline',
    ],
  ] as const)('%s', (_n, facts, now, flag, cause) => {
    expect(dutyFlag(facts, now)).toEqual({ flag, cause });
  });
});

describe('nextDutyCheck', () => {
  it.each([
    ['before the at-risk mark: the mark', d, t0, t0 + 80],
    ['while at risk: just past the deadline', d, t0 + 85, t0 + 101],
    ['at the deadline: just past it', d, t0 + 100, t0 + 101],
    ['past the deadline: never again', d, t0 + 101, null],
    ['done: never again', { ...d, doneAt: t0 + 5 }, t0 + 10, null],
  ] as const)('%s', (_n, facts, now, next) => {
    expect(nextDutyCheck(facts, now)).toBe(next);
  });

  it('every check it schedules changes the flag, and the escalation ends in breach', () => {
    let now = t0;
    const seen: (string | null)[] = [dutyFlag(d, now).flag];
    for (let at = nextDutyCheck(d, now); at !== null; at = nextDutyCheck(d, now)) {
      now = at;
      seen.push(dutyFlag(d, now).flag);
    }
    expect(seen).toEqual([null, 'at_risk', 'breach']);
  });
});

describe('flagChangeAt', () => {
  it('is undefined when the flag stays, and names the new flag and cause when it moves', () => {
    expect(flagChangeAt({ complianceFlag: null }, d, t0 + 1)).toBeUndefined();
    expect(flagChangeAt({ complianceFlag: 'at_risk' }, d, t0 + 90)).toBeUndefined();
    expect(flagChangeAt({ complianceFlag: 'at_risk' }, d, t0 + 101)).toEqual({
      flag: 'breach',
      at: new Date(t0 + 101).toISOString(),
      cause: 'deadline_passed',
    });
  });
});

describe('gaugeMoves', () => {
  it.each([
    ['opened with time left', undefined, { open: true, flag: null }, { none: 1 }],
    [
      'time left → at_risk',
      { open: true, flag: null },
      { open: true, flag: 'at_risk' },
      { none: -1, at_risk: 1 },
    ],
    [
      'at_risk → breach',
      { open: true, flag: 'at_risk' },
      { open: true, flag: 'breach' },
      { at_risk: -1, breach: 1 },
    ],
    [
      'answered while at risk',
      { open: true, flag: 'at_risk' },
      { open: false, flag: null },
      { at_risk: -1 },
    ],
    ['answered late', { open: true, flag: 'breach' }, { open: false, flag: null }, { breach: -1 }],
  ] as const)('%s', (_n, before, after, moves) => {
    expect(gaugeMoves(before, after)).toEqual(moves);
  });
});
