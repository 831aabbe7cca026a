import { POSTBACK_WINDOW_MS, type EventType } from '../consent/events.js';
import type { App } from '../types.js';

/**
 * Compliance flags (docs/api.md, Compliance flags). Pure: the clock is a parameter, nothing here
 * reads the time or does I/O, so the compliance worker, the timers and the ledger API all compute
 * the same flag from the same facts.
 */

export const POSTBACK_STATUSES = ['processed', 'deleted', 'failed', 'partial'] as const;
export type PostbackStatus = (typeof POSTBACK_STATUSES)[number];

export const POSTBACK_RISKS = ['none', 'low', 'medium', 'high', 'critical'] as const;
export type PostbackRisk = (typeof POSTBACK_RISKS)[number];

/** In increasing severity (docs/api.md, Compliance flags): the index is the severity. */
export const FLAGS = ['ok', 'at_risk', 'breach', 'unconfirmed_erasure', 'critical'] as const;
export type ComplianceFlag = (typeof FLAGS)[number];

const DAY_MS = 24 * 3_600_000;
/** 30 or more days without a `data.deleted` confirmation (docs/api.md, Compliance flags). */
export const UNCONFIRMED_ERASURE_AFTER_MS = 30 * DAY_MS;

/**
 * Events whose missed SLA escalates to breach after the grace period (the timeliness table in
 * docs/api.md, Compliance flags).
 */
type GracedEvent = 'consent.withdrawn' | 'consent.expired';
const GRACED: ReadonlySet<EventType> = new Set<GracedEvent>([
  'consent.withdrawn',
  'consent.expired',
]);

export const severity = (f: ComplianceFlag): number => FLAGS.indexOf(f);

/** The more severe of two flags; `null` (no flag yet) is below every flag. */
export function worstFlag(
  a: ComplianceFlag | null,
  b: ComplianceFlag | null,
): ComplianceFlag | null {
  if (a === null) return b;
  if (b === null) return a;
  return severity(a) >= severity(b) ? a : b;
}

/** Content flag of one postback; the first matching rule wins (docs/api.md, Compliance flags). */
export function contentFlag(p: { status: PostbackStatus; risk: PostbackRisk }): ComplianceFlag {
  if (p.risk === 'critical') return 'critical';
  if (p.risk === 'high') return 'breach';
  if (p.status === 'failed' || p.status === 'partial' || p.risk === 'medium') return 'at_risk';
  return 'ok';
}

/** Only these statuses confirm that the work (for `data.deleted`: the erasure) was done. */
export const confirms = (s: PostbackStatus) => s === 'processed' || s === 'deleted';

export const needsPostback = (event: EventType) => POSTBACK_WINDOW_MS[event] !== undefined;

/** What the flag is computed from: the dispatch and the postbacks accepted for it. */
export interface FlagFacts {
  event: EventType;
  /** When the event was created (ISO): the SLA clock starts here. */
  createdAt: string;
  /** The deadline sent to the app in the webhook, when stored; it wins over a recomputation. */
  postbackDueAt?: string | null | undefined;
  /** `receivedAt` is the service's clock, not the app's `completedAt`, which the app controls. */
  postbacks: readonly { status: PostbackStatus; risk: PostbackRisk; receivedAt: string }[];
}

/**
 * The per-app SLA settings: sandbox time compression and per-event grace (docs/api.md, Compliance
 * flags).
 */
export type SlaPolicy = Partial<Pick<App, 'slaTimeScale' | 'graceMs'>>;

/** The instants (epoch ms) at which a missing postback escalates. */
export interface SlaDeadlines {
  /** The last instant a postback is on time; later it is at_risk. */
  dueAt: number;
  /** Withdrawn/expired: past this, breach. */
  breachAt?: number;
  /** data.deleted: from this instant on without a confirmation, unconfirmed_erasure. */
  unconfirmedAt?: number;
}

/**
 * The SLA deadlines of a dispatch, or undefined for an event that needs no postback. The
 * sandbox `slaTimeScale` divides the window, the grace and the 30-day threshold alike (as
 * `postbackDueAt` in events.ts does), so a whole escalation can run in seconds.
 */
export function slaDeadlines(
  d: Pick<FlagFacts, 'event' | 'createdAt' | 'postbackDueAt'>,
  policy: SlaPolicy = {},
): SlaDeadlines | undefined {
  const window = POSTBACK_WINDOW_MS[d.event];
  if (window === undefined) return undefined;
  const scale = Math.max(1, policy.slaTimeScale ?? 1);
  const start = Date.parse(d.createdAt);
  const dueAt = d.postbackDueAt ? Date.parse(d.postbackDueAt) : start + window / scale;
  if (GRACED.has(d.event)) {
    const grace = policy.graceMs?.[d.event as GracedEvent] ?? window;
    return { dueAt, breachAt: dueAt + grace / scale };
  }
  return { dueAt, unconfirmedAt: start + UNCONFIRMED_ERASURE_AFTER_MS / scale };
}

const earliest = (times: number[]): number | undefined =>
  times.length ? Math.min(...times) : undefined;

/**
 * Timeliness flag at `now`: `null` while the postback is not yet late. A late postback freezes
 * the escalation at its arrival (it was that late, and stays so); an on-time one gives `ok`.
 * Any postback ends silence; only a confirming one (processed/deleted) confirms an erasure.
 */
export function timelinessFlag(
  d: FlagFacts,
  now: Date,
  policy: SlaPolicy = {},
): ComplianceFlag | null {
  const dl = slaDeadlines(d, policy);
  if (!dl) return null;
  const t = now.getTime();
  const received = d.postbacks.map((p) => Date.parse(p.receivedAt)).filter((r) => r <= t);
  const firstAt = earliest(received);
  let flag: ComplianceFlag | null = null;
  const answeredOrNow = firstAt ?? t;
  if (answeredOrNow > dl.dueAt) flag = 'at_risk';
  else if (firstAt !== undefined) flag = 'ok';
  if (dl.breachAt !== undefined && answeredOrNow > dl.breachAt) flag = 'breach';
  if (dl.unconfirmedAt !== undefined) {
    const confirmedAt = earliest(
      d.postbacks
        .filter((p) => confirms(p.status))
        .map((p) => Date.parse(p.receivedAt))
        .filter((r) => r <= t),
    );
    if ((confirmedAt ?? t) >= dl.unconfirmedAt) flag = 'unconfirmed_erasure';
  }
  return flag;
}

/**
 * Content flag of the dispatch at `now`: that of its latest postback, since a later postback
 * reports the current state (e.g. `processed` after a `partial`). Earlier ones stay in the
 * flag history. Ties on `receivedAt` take the more severe, so the order of arrival of
 * duplicates never changes the result.
 */
export function latestContentFlag(d: FlagFacts, now: Date): ComplianceFlag | null {
  let latestAt = -Infinity;
  let flag: ComplianceFlag | null = null;
  for (const p of d.postbacks) {
    const at = Date.parse(p.receivedAt);
    if (at > now.getTime()) continue;
    const f = contentFlag(p);
    if (at > latestAt) [latestAt, flag] = [at, f];
    else if (at === latestAt) flag = worstFlag(flag, f);
  }
  return flag;
}

export type FlagCause = 'postback' | 'sla_missed' | 'sla_breached' | 'erasure_unconfirmed';

export interface Assessment {
  flag: ComplianceFlag | null;
  content: ComplianceFlag | null;
  timeliness: ComplianceFlag | null;
  /** Which rule decided `flag` (for the flag history); null when `flag` is null. */
  cause: FlagCause | null;
}

const timelinessCause: Partial<Record<ComplianceFlag, FlagCause>> = {
  at_risk: 'sla_missed',
  breach: 'sla_breached',
  unconfirmed_erasure: 'erasure_unconfirmed',
};

/**
 * The dispatch's flag at `now`: the most severe of content and timeliness. `null` for an
 * event that needs no postback, and while a required postback is awaited within its window.
 */
export function assess(d: FlagFacts, now: Date, policy: SlaPolicy = {}): Assessment {
  if (!needsPostback(d.event)) return { flag: null, content: null, timeliness: null, cause: null };
  const content = latestContentFlag(d, now);
  const timeliness = timelinessFlag(d, now, policy);
  const flag = worstFlag(content, timeliness);
  let cause: FlagCause | null = null;
  if (flag !== null) cause = flag === content ? 'postback' : (timelinessCause[flag] ?? 'postback');
  return { flag, content, timeliness, cause };
}

export const currentFlag = (d: FlagFacts, now: Date, policy: SlaPolicy = {}) =>
  assess(d, now, policy).flag;

/**
 * When the flag would next change if no further postback arrives: the first instant after
 * `now` whose flag differs from the flag at `now`, or null if it never will. The flag only
 * changes at the SLA deadlines (just past `dueAt` and `breachAt`, at `unconfirmedAt`) and at
 * a postback's arrival, so only those instants are checked. Timers schedule themselves here.
 */
export function nextDeadline(d: FlagFacts, now: Date, policy: SlaPolicy = {}): Date | null {
  const dl = slaDeadlines(d, policy);
  if (!dl) return null;
  const t = now.getTime();
  const current = currentFlag(d, now, policy);
  const candidates = [dl.dueAt + 1, ...(dl.breachAt !== undefined ? [dl.breachAt + 1] : [])];
  if (dl.unconfirmedAt !== undefined) candidates.push(dl.unconfirmedAt);
  // Postbacks stamped after `now` (replaying history) take effect at their arrival.
  candidates.push(...d.postbacks.map((p) => Date.parse(p.receivedAt)));
  for (const c of candidates.filter((c) => c > t).sort((a, b) => a - b)) {
    const at = new Date(c);
    if (currentFlag(d, at, policy) !== current) return at;
  }
  return null;
}
