import { describe, expect, it } from 'vitest';
import { EVENT_TYPES, type EventType } from '../consent/events.js';
import {
  POSTBACK_RISKS,
  POSTBACK_STATUSES,
  assess,
  currentFlag,
  nextDeadline,
  severity,
  slaDeadlines,
  timelinessFlag,
  type ComplianceFlag,
  type FlagFacts,
  type SlaPolicy,
} from './flags.js';

/**
 * Property tests of the flag rules over generated cases. Seeded, so a failure reproduces;
 * plain loops (no property-testing dependency), and `check` builds its message only on
 * failure so thousands of cases stay fast.
 */

const H = 3_600_000;
const D = 24 * H;
const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();
const at = (offsetMs: number) => new Date(T0 + offsetMs);

function check(ok: boolean, what: string, ctx: () => unknown) {
  if (!ok) expect.fail(`${what}: ${JSON.stringify(ctx())}`);
}

/** mulberry32: a tiny seeded PRNG. */
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

const POSTBACK_EVENTS = ['consent.withdrawn', 'consent.expired', 'data.deleted'] as const;

function generate(seed: number, count: number) {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  // Offsets cluster around the interesting instants so boundaries are hit often.
  const offset = () =>
    pick([0, H, 2 * H, 24 * H, 72 * H, 144 * H, 30 * D]) +
    pick([-1, 0, 1, Math.floor(r() * 10 * H), -Math.floor(r() * H)]);
  return Array.from({ length: count }, () => {
    const event: EventType = r() < 0.85 ? pick(POSTBACK_EVENTS) : pick(EVENT_TYPES);
    const postbacks = Array.from({ length: pick([0, 0, 1, 1, 2, 3]) }, () => ({
      status: pick(POSTBACK_STATUSES),
      risk: pick(POSTBACK_RISKS),
      receivedAt: iso(T0 + Math.max(0, offset())),
    }));
    const f: FlagFacts = { event, createdAt: iso(T0), postbacks };
    const policy: SlaPolicy = {
      slaTimeScale: pick([1, 1, 60, 3600]),
      ...(r() < 0.3 ? { graceMs: { [event]: Math.floor(r() * 5 * H) } } : {}),
    };
    return { f, policy, now: Math.max(0, offset()), pick, r };
  });
}

const sev = (f: ComplianceFlag | null) => (f === null ? -1 : severity(f));

describe('flag properties', () => {
  const cases = generate(20260101, 3000);

  it('generates every postback event, pending and answered, with boundaries', () => {
    const events = new Set(cases.map((c) => c.f.event));
    for (const e of POSTBACK_EVENTS) expect(events).toContain(e);
    expect(cases.filter((c) => c.f.postbacks.length === 0).length).toBeGreaterThan(500);
    expect(cases.filter((c) => c.now === H + 1).length).toBeGreaterThan(0);
  });

  it('a pending dispatch only escalates: severity is monotone in time', () => {
    for (const { f, policy, r } of cases) {
      const pending = { ...f, postbacks: [] };
      let prev = -1;
      for (let t = 0; t <= 32 * D; t += Math.floor(r() * 6 * H) + 1) {
        const s = sev(currentFlag(pending, at(t), policy));
        check(s >= prev, 'severity fell', () => ({ pending, policy, t }));
        prev = s;
      }
    }
  });

  it('timeliness never improves with time, whatever the postbacks', () => {
    for (const { f, policy, now } of cases) {
      const a = sev(timelinessFlag(f, at(now), policy));
      const b = sev(timelinessFlag(f, at(now + H), policy));
      check(b >= a, 'timeliness improved', () => ({ f, policy, now }));
    }
  });

  it('the flag is the worst of content and timeliness; null exactly when awaited or not required', () => {
    for (const { f, policy, now } of cases) {
      const a = assess(f, at(now), policy);
      const dl = slaDeadlines(f, policy);
      const ctx = () => ({ f, policy, now, a });
      if (!dl) {
        check(a.flag === null, 'flag on an event that needs no postback', ctx);
        continue;
      }
      check(sev(a.flag) === Math.max(sev(a.content), sev(a.timeliness)), 'not the worst', ctx);
      const answered = f.postbacks.some((p) => Date.parse(p.receivedAt) <= T0 + now);
      check((a.flag === null) === (!answered && T0 + now <= dl.dueAt), 'null rule', ctx);
      check((a.cause === null) === (a.flag === null), 'cause without flag', ctx);
    }
  });

  it('is independent of postback order and duplicates (idempotent recompute)', () => {
    for (const { f, policy, now, pick } of cases) {
      const base = currentFlag(f, at(now), policy);
      const reversed = { ...f, postbacks: [...f.postbacks].reverse() };
      check(currentFlag(reversed, at(now), policy) === base, 'order matters', () => ({ f, now }));
      if (f.postbacks.length) {
        const dup = { ...f, postbacks: [...f.postbacks, pick(f.postbacks)] };
        check(currentFlag(dup, at(now), policy) === base, 'duplicate matters', () => ({ f, now }));
      }
    }
  });

  it('nextDeadline: the flag holds until it, and differs at it', () => {
    for (const { f, policy, now, r } of cases) {
      const here = currentFlag(f, at(now), policy);
      const next = nextDeadline(f, at(now), policy);
      const ctx = () => ({ f, policy, now, next });
      const end = next ? next.getTime() - T0 : now + 400 * D;
      check(end > now, 'deadline not after now', ctx);
      for (let i = 0; i < 20; i++) {
        const t = now + Math.floor(r() * (end - now));
        check(currentFlag(f, at(t), policy) === here, `changed early at ${t}`, ctx);
      }
      check(currentFlag(f, at(end - 1), policy) === here, 'changed just before', ctx);
      if (next) check(currentFlag(f, next, policy) !== here, 'no change at the deadline', ctx);
    }
  });

  it('time compression is a pure change of time unit', () => {
    const s = 3600;
    for (const { f, now } of cases) {
      // Round to whole compressed milliseconds, then compare scale 1 against scale s.
      const unit = (ms: number) => Math.floor((ms - T0) / s);
      const real = {
        ...f,
        postbacks: f.postbacks.map((p) => ({
          ...p,
          receivedAt: iso(T0 + unit(Date.parse(p.receivedAt)) * s),
        })),
      };
      const compressed = {
        ...f,
        postbacks: f.postbacks.map((p) => ({
          ...p,
          receivedAt: iso(T0 + unit(Date.parse(p.receivedAt))),
        })),
      };
      const k = Math.floor(now / s);
      check(
        currentFlag(compressed, at(k), { slaTimeScale: s }) === currentFlag(real, at(k * s)),
        'compression changed the flag',
        () => ({ f, now }),
      );
    }
  });
});
