import { describe, expect, it } from 'vitest';
import type { EventType } from '../consent/events.js';
import {
  FLAGS,
  POSTBACK_RISKS,
  POSTBACK_STATUSES,
  assess,
  contentFlag,
  currentFlag,
  nextDeadline,
  severity,
  slaDeadlines,
  timelinessFlag,
  worstFlag,
  type ComplianceFlag,
  type FlagFacts,
  type PostbackRisk,
  type PostbackStatus,
  type SlaPolicy,
} from './flags.js';

const H = 3_600_000;
const D = 24 * H;
const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();
const at = (offsetMs: number) => new Date(T0 + offsetMs);

function facts(
  event: EventType,
  postbacks: [offsetMs: number, PostbackStatus, PostbackRisk][] = [],
  over: Partial<FlagFacts> = {},
): FlagFacts {
  return {
    event,
    createdAt: iso(T0),
    postbacks: postbacks.map(([o, status, risk]) => ({ status, risk, receivedAt: iso(T0 + o) })),
    ...over,
  };
}

describe('content flag (docs/api.md, Compliance flags: first match wins)', () => {
  // Every status × risk, written out: the expected column is the table, not the code.
  const table: [PostbackStatus, PostbackRisk, ComplianceFlag][] = [
    ['processed', 'none', 'ok'],
    ['processed', 'low', 'ok'],
    ['processed', 'medium', 'at_risk'],
    ['processed', 'high', 'breach'],
    ['processed', 'critical', 'critical'],
    ['deleted', 'none', 'ok'],
    ['deleted', 'low', 'ok'],
    ['deleted', 'medium', 'at_risk'],
    ['deleted', 'high', 'breach'],
    ['deleted', 'critical', 'critical'],
    ['failed', 'none', 'at_risk'],
    ['failed', 'low', 'at_risk'],
    ['failed', 'medium', 'at_risk'],
    ['failed', 'high', 'breach'],
    ['failed', 'critical', 'critical'],
    ['partial', 'none', 'at_risk'],
    ['partial', 'low', 'at_risk'],
    ['partial', 'medium', 'at_risk'],
    ['partial', 'high', 'breach'],
    ['partial', 'critical', 'critical'],
  ];
  it('covers every combination exactly once', () => {
    expect(table).toHaveLength(POSTBACK_STATUSES.length * POSTBACK_RISKS.length);
    expect(new Set(table.map(([s, r]) => `${s}/${r}`)).size).toBe(table.length);
  });
  it.each(table)('status %s, risk %s → %s', (status, risk, flag) => {
    expect(contentFlag({ status, risk })).toBe(flag);
    // An on-time postback: the dispatch's flag is the content flag, for every postback event.
    for (const event of ['consent.withdrawn', 'consent.expired', 'data.deleted'] as const)
      expect(currentFlag(facts(event, [[10 * 60_000, status, risk]]), at(20 * 60_000))).toBe(flag);
  });
});

describe('severity order ok < at_risk < breach < unconfirmed_erasure < critical', () => {
  it('orders the flags and picks the worst', () => {
    expect(FLAGS.map(severity)).toEqual([0, 1, 2, 3, 4]);
    expect(worstFlag('breach', 'unconfirmed_erasure')).toBe('unconfirmed_erasure');
    expect(worstFlag('critical', 'unconfirmed_erasure')).toBe('critical');
    expect(worstFlag(null, 'ok')).toBe('ok');
    expect(worstFlag('at_risk', null)).toBe('at_risk');
    expect(worstFlag(null, null)).toBeNull();
  });
});

describe('missed postbacks (docs/api.md, Compliance flags: timeliness)', () => {
  // [event, instant, flag]: walks each row through its stages with the default grace (= W).
  const rows: [EventType, number, ComplianceFlag | null][] = [
    ['consent.withdrawn', 0, null],
    ['consent.withdrawn', H, null],
    ['consent.withdrawn', H + 1, 'at_risk'],
    ['consent.withdrawn', 2 * H, 'at_risk'],
    ['consent.withdrawn', 2 * H + 1, 'breach'],
    ['consent.withdrawn', 40 * D, 'breach'],
    ['consent.expired', 71 * H, null],
    ['consent.expired', 72 * H, null],
    ['consent.expired', 72 * H + 1, 'at_risk'],
    ['consent.expired', 144 * H, 'at_risk'],
    ['consent.expired', 144 * H + 1, 'breach'],
    ['consent.expired', 40 * D, 'breach'],
    ['data.deleted', 24 * H, null],
    ['data.deleted', 24 * H + 1, 'at_risk'],
    ['data.deleted', 48 * H + 1, 'at_risk'], // no breach stage for data.deleted
    ['data.deleted', 30 * D - 1, 'at_risk'],
    ['data.deleted', 30 * D, 'unconfirmed_erasure'],
    ['data.deleted', 400 * D, 'unconfirmed_erasure'],
  ];
  it.each(rows)('%s with no postback at +%i ms → %s', (event, offset, flag) => {
    expect(currentFlag(facts(event), at(offset))).toBe(flag);
  });

  it('the cause names the rule', () => {
    expect(assess(facts('consent.withdrawn'), at(H + 1)).cause).toBe('sla_missed');
    expect(assess(facts('consent.withdrawn'), at(3 * H)).cause).toBe('sla_breached');
    expect(assess(facts('data.deleted'), at(31 * D)).cause).toBe('erasure_unconfirmed');
    expect(assess(facts('data.deleted', [[H, 'deleted', 'high']]), at(2 * H)).cause).toBe(
      'postback',
    );
    expect(assess(facts('data.deleted'), at(H)).cause).toBeNull();
  });

  it('events that need no postback never carry a flag', () => {
    for (const event of [
      'consent.created',
      'consent.granted',
      'consent.expiry.reminder',
    ] as const) {
      expect(slaDeadlines(facts(event))).toBeUndefined();
      expect(currentFlag(facts(event), at(365 * D))).toBeNull();
      expect(nextDeadline(facts(event), at(0))).toBeNull();
    }
  });
});

describe('late and partial answers', () => {
  it('a late postback freezes the escalation at its arrival', () => {
    const late = facts('consent.withdrawn', [[90 * 60_000, 'processed', 'none']]);
    expect(currentFlag(late, at(100 * D))).toBe('at_risk');
    const veryLate = facts('consent.withdrawn', [[3 * H, 'processed', 'none']]);
    expect(currentFlag(veryLate, at(100 * D))).toBe('breach');
    expect(currentFlag(facts('consent.expired', [[72 * H, 'processed', 'low']]), at(D * 9))).toBe(
      'ok',
    );
  });

  it('a failed answer ends silence but does not confirm an erasure', () => {
    const failed = facts('data.deleted', [[H, 'failed', 'none']]);
    expect(currentFlag(failed, at(29 * D))).toBe('at_risk');
    expect(currentFlag(failed, at(30 * D))).toBe('unconfirmed_erasure');
    expect(timelinessFlag(failed, at(2 * D))).toBe('ok');
  });

  it('a late confirmation before 30 days stays at_risk; after 30 days stays unconfirmed', () => {
    expect(currentFlag(facts('data.deleted', [[10 * D, 'deleted', 'none']]), at(60 * D))).toBe(
      'at_risk',
    );
    expect(currentFlag(facts('data.deleted', [[31 * D, 'deleted', 'none']]), at(60 * D))).toBe(
      'unconfirmed_erasure',
    );
  });

  it('critical content outranks an unconfirmed erasure; unconfirmed outranks breach', () => {
    expect(currentFlag(facts('data.deleted', [[H, 'failed', 'critical']]), at(31 * D))).toBe(
      'critical',
    );
    expect(currentFlag(facts('data.deleted', [[H, 'partial', 'high']]), at(31 * D))).toBe(
      'unconfirmed_erasure',
    );
  });

  it('the latest postback reports the current state; ties take the worse', () => {
    const fixed = facts('consent.withdrawn', [
      [10 * 60_000, 'partial', 'medium'],
      [20 * 60_000, 'processed', 'none'],
    ]);
    expect(currentFlag(fixed, at(15 * 60_000))).toBe('at_risk');
    expect(currentFlag(fixed, at(30 * 60_000))).toBe('ok');
    const tie = facts('consent.withdrawn', [
      [10 * 60_000, 'processed', 'none'],
      [10 * 60_000, 'processed', 'high'],
    ]);
    expect(currentFlag(tie, at(H))).toBe('breach');
  });
});

describe('per-app settings', () => {
  it('a grace override moves the breach', () => {
    const policy: SlaPolicy = { graceMs: { 'consent.withdrawn': 15 * 60_000 } };
    expect(currentFlag(facts('consent.withdrawn'), at(H + 15 * 60_000), policy)).toBe('at_risk');
    expect(currentFlag(facts('consent.withdrawn'), at(H + 15 * 60_000 + 1), policy)).toBe('breach');
  });

  it('sandbox slaTimeScale compresses window, grace and the 30-day threshold', () => {
    const s = { slaTimeScale: 3600 };
    expect(slaDeadlines(facts('consent.withdrawn'), s)).toEqual({
      dueAt: T0 + 1000,
      breachAt: T0 + 2000,
    });
    expect(slaDeadlines(facts('data.deleted'), s)).toEqual({
      dueAt: T0 + 24_000,
      unconfirmedAt: T0 + 720_000,
    });
    expect(currentFlag(facts('consent.withdrawn'), at(1500), s)).toBe('at_risk');
    const g = { slaTimeScale: 3600, graceMs: { 'consent.expired': 36_000_000 } };
    expect(slaDeadlines(facts('consent.expired'), g)?.breachAt).toBe(T0 + 72_000 + 10_000);
  });

  it('a stored postbackDueAt wins over the recomputed window', () => {
    const f = facts('consent.withdrawn', [], { postbackDueAt: iso(T0 + 10_000) });
    expect(slaDeadlines(f)).toEqual({ dueAt: T0 + 10_000, breachAt: T0 + 10_000 + H });
    expect(currentFlag(f, at(10_001))).toBe('at_risk');
  });
});

describe('nextDeadline', () => {
  it('points at each escalation in turn, then null', () => {
    const f = facts('consent.withdrawn');
    expect(nextDeadline(f, at(0))).toEqual(at(H + 1));
    expect(nextDeadline(f, at(H + 1))).toEqual(at(2 * H + 1));
    expect(nextDeadline(f, at(2 * H + 1))).toBeNull();
    const e = facts('data.deleted');
    expect(nextDeadline(e, at(0))).toEqual(at(24 * H + 1));
    expect(nextDeadline(e, at(25 * H))).toEqual(at(30 * D));
    expect(nextDeadline(e, at(30 * D))).toBeNull();
  });

  it('skips escalations hidden by worse content, and stops once confirmed in time', () => {
    expect(nextDeadline(facts('consent.withdrawn', [[H / 2, 'failed', 'critical']]), at(H))).toBe(
      null,
    );
    expect(nextDeadline(facts('data.deleted', [[H, 'failed', 'none']]), at(2 * H))).toEqual(
      at(30 * D),
    );
    expect(nextDeadline(facts('data.deleted', [[H, 'deleted', 'none']]), at(2 * H))).toBeNull();
  });
});
