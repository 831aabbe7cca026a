import { describe, expect, it } from 'vitest';
import {
  POSTBACK_RISKS,
  POSTBACK_STATUSES,
  assess,
  type FlagFacts,
  type PostbackRisk,
  type PostbackStatus,
} from '../../shared/domain/compliance/flags.js';
import type { EventType } from '../../shared/domain/consent/events.js';
import { gaugeMembership, nextCheckAt, planFlagChanges, type Recorded } from './plan.js';

const M = 60_000;
const H = 60 * M;
const D = 24 * H;
const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const iso = (offsetMs: number) => new Date(T0 + offsetMs).toISOString();
const at = (offsetMs: number) => new Date(T0 + offsetMs);

const pb = (
  offsetMs: number,
  status: PostbackStatus = 'processed',
  risk: PostbackRisk = 'none',
) => ({
  status,
  risk,
  receivedAt: iso(offsetMs),
});

function facts(event: EventType, postbacks: ReturnType<typeof pb>[] = []): FlagFacts {
  return { event, createdAt: iso(0), postbacks };
}

const none: Recorded = { flag: null };
const brief = (cs: ReturnType<typeof planFlagChanges>) =>
  cs.map((c) => [c.flag, c.previous, c.at, c.cause]);

describe('planFlagChanges', () => {
  it.each([
    ['withdrawn, awaited inside the window', facts('consent.withdrawn'), none, 30 * M, []],
    [
      'withdrawn, silent just past the window',
      facts('consent.withdrawn'),
      none,
      H + 1,
      [['at_risk', null, iso(H + 1), 'sla_missed']],
    ],
    [
      'withdrawn, silent past window + grace: at_risk then breach, each at its instant',
      facts('consent.withdrawn'),
      none,
      3 * H,
      [
        ['at_risk', null, iso(H + 1), 'sla_missed'],
        ['breach', 'at_risk', iso(2 * H + 1), 'sla_breached'],
      ],
    ],
    [
      'withdrawn, at_risk recorded: only breach is new',
      facts('consent.withdrawn'),
      { flag: 'at_risk', at: iso(H + 1) },
      3 * H,
      [['breach', 'at_risk', iso(2 * H + 1), 'sla_breached']],
    ],
    [
      'processed/none in time: ok at its arrival',
      facts('consent.withdrawn', [pb(10 * M)]),
      none,
      10 * M,
      [['ok', null, iso(10 * M), 'postback']],
    ],
    [
      'risk critical: critical',
      facts('consent.withdrawn', [pb(10 * M, 'processed', 'critical')]),
      none,
      10 * M,
      [['critical', null, iso(10 * M), 'postback']],
    ],
    [
      'risk high: breach by content',
      facts('consent.expired', [pb(10 * M, 'processed', 'high')]),
      none,
      10 * M,
      [['breach', null, iso(10 * M), 'postback']],
    ],
    [
      'late postback freezes the escalation at at_risk',
      facts('consent.withdrawn', [pb(90 * M)]),
      { flag: 'at_risk', at: iso(H + 1) },
      3 * H,
      [],
    ],
    [
      'data.deleted never confirmed: at_risk, then unconfirmed_erasure at 30 days',
      facts('data.deleted'),
      none,
      31 * D,
      [
        ['at_risk', null, iso(D + 1), 'sla_missed'],
        ['unconfirmed_erasure', 'at_risk', iso(30 * D), 'erasure_unconfirmed'],
      ],
    ],
    [
      'a postback stuck in the outbox takes effect at the last recorded change, never before',
      facts('consent.withdrawn', [pb(50 * M)]),
      { flag: 'at_risk', at: iso(H + 1) },
      H + 5 * M,
      [['ok', 'at_risk', iso(H + 1), 'postback']],
    ],
    [
      'partial then processed: at_risk then ok',
      facts('data.deleted', [pb(M, 'partial'), pb(2 * M, 'deleted')]),
      none,
      3 * M,
      [
        ['at_risk', null, iso(M), 'postback'],
        ['ok', 'at_risk', iso(2 * M), 'postback'],
      ],
    ],
  ] as const)('%s', (_name, f, recorded, evalOffset, expected) => {
    expect(brief(planFlagChanges(f, recorded, at(evalOffset), {}))).toEqual(expected);
  });

  it('honours the sandbox time scale and a per-app grace', () => {
    const f = facts('consent.withdrawn');
    expect(brief(planFlagChanges(f, none, at(5_000), { slaTimeScale: 3600 }))).toEqual([
      ['at_risk', null, iso(1_001), 'sla_missed'],
      ['breach', 'at_risk', iso(2_001), 'sla_breached'],
    ]);
    const graced = { graceMs: { 'consent.withdrawn': 10 * H } };
    expect(brief(planFlagChanges(f, none, at(3 * H), graced))).toEqual([
      ['at_risk', null, iso(H + 1), 'sla_missed'],
    ]);
  });

  it('records nothing for an event that needs no postback', () => {
    expect(planFlagChanges(facts('consent.granted'), none, at(40 * D), {})).toEqual([]);
  });

  /** Seeded, so a failure reproduces. */
  function rng(seed: number) {
    let a = seed >>> 0;
    return () => {
      a = (a + 0x6d2b79f5) >>> 0;
      let t = a;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }

  it('evaluated in any number of steps, ends at the flag of the last instant and never goes back in time', () => {
    const r = rng(42);
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)]!;
    const events: EventType[] = ['consent.withdrawn', 'consent.expired', 'data.deleted'];
    for (let n = 0; n < 500; n++) {
      const event = pick(events);
      const postbacks = Array.from({ length: Math.floor(r() * 3) }, () =>
        pb(Math.floor(r() * 35 * D), pick(POSTBACK_STATUSES), pick(POSTBACK_RISKS)),
      ).sort((a, b) => a.receivedAt.localeCompare(b.receivedAt));
      const f = facts(event, postbacks);
      const steps = Array.from({ length: 1 + Math.floor(r() * 4) }, () =>
        Math.floor(r() * 40 * D),
      ).sort((a, b) => a - b);
      let recorded: Recorded = none;
      const all: ReturnType<typeof planFlagChanges> = [];
      for (const s of steps) {
        const cs = planFlagChanges(f, recorded, at(s), {});
        all.push(...cs);
        const last = cs.at(-1);
        if (last) recorded = { flag: last.flag, at: last.at };
      }
      const end = at(steps.at(-1)!);
      expect(recorded.flag).toBe(assess(f, end, {}).flag);
      for (let i = 1; i < all.length; i++) {
        expect(all[i]!.at >= all[i - 1]!.at).toBe(true);
        expect(all[i]!.previous).toBe(all[i - 1]!.flag);
        expect(all[i]!.flag).not.toBe(all[i]!.previous);
      }
      // Planning again at the same instant adds nothing: a redelivered check is a no-op.
      expect(planFlagChanges(f, recorded, end, {})).toEqual([]);
    }
  });
});

describe('gaugeMembership and nextCheckAt', () => {
  const f = facts('consent.withdrawn');
  it.each([
    [0, { awaitingPostback: true, nearDeadline: false }, 48 * M],
    [48 * M - 1, { awaitingPostback: true, nearDeadline: false }, 48 * M],
    [48 * M, { awaitingPostback: true, nearDeadline: true }, H + 1],
    [H, { awaitingPostback: true, nearDeadline: true }, H + 1],
    [H + 1, { awaitingPostback: true, nearDeadline: false }, 2 * H + 1],
    [2 * H + 1, { awaitingPostback: true, nearDeadline: false }, null],
  ])('withdrawn, silent, at +%i ms', (offset, gauges, next) => {
    expect(gaugeMembership(f, at(offset), {})).toEqual(gauges);
    expect(nextCheckAt(f, at(offset), {})?.getTime() ?? null).toBe(
      next === null ? null : T0 + next,
    );
  });

  it('stops awaiting and checking once an on-time postback settles it', () => {
    const answered = facts('consent.withdrawn', [pb(10 * M)]);
    expect(gaugeMembership(answered, at(50 * M), {})).toEqual({
      awaitingPostback: false,
      nearDeadline: false,
    });
    expect(nextCheckAt(answered, at(10 * M), {})).toBeNull();
  });

  it('keeps checking a data.deleted answered without confirmation until 30 days', () => {
    const failed = facts('data.deleted', [pb(10 * M, 'failed')]);
    expect(nextCheckAt(failed, at(D + 1), {})?.toISOString()).toBe(iso(30 * D));
    expect(gaugeMembership(failed, at(D + 1), {}).awaitingPostback).toBe(false);
  });

  it('compresses the near-deadline mark with the time scale', () => {
    // 1 h / 3600 = 1 s window: near from 800 ms.
    expect(nextCheckAt(f, at(0), { slaTimeScale: 3600 })?.getTime()).toBe(T0 + 800);
  });
});
