import {
  assess,
  nextDeadline,
  slaDeadlines,
  type ComplianceFlag,
  type FlagFacts,
  type SlaPolicy,
} from '../../shared/domain/compliance/flags.js';
import { nearDeadlineAt } from '../../shared/domain/deadlines.js';
import type { FlagChange } from '../../shared/storage/ledger/flag-entries.js';

/**
 * What the compliance worker decides, as pure functions of the dispatch's facts, its recorded
 * flag history and an instant: which flag changes to record, which gauges the dispatch counts
 * in, and when to look again. The rules themselves are shared/domain/compliance/flags.ts.
 */

/** The last recorded change: where the walk starts. */
export interface Recorded {
  flag: ComplianceFlag | null;
  /** ISO time of the last change; undefined when the flag never changed. */
  at?: string | undefined;
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * The flag changes from the last recorded one up to `evalAt`, each at the instant it happened
 * (a deadline passing, a postback's arrival), so a worker that ran late still records at_risk
 * and then breach rather than jumping straight to breach. The walk starts at the last change
 * (or the event's creation) and visits every instant where the flag can change. Times never
 * go back: a postback that reaches the worker after a later change was recorded (it was stuck
 * in the outbox) takes effect at that later change's time.
 */
export function planFlagChanges(
  facts: FlagFacts,
  recorded: Recorded,
  evalAt: Date,
  policy: SlaPolicy,
): FlagChange[] {
  const changes: FlagChange[] = [];
  const endMs = evalAt.getTime();
  let flag = recorded.flag;
  let lastMs = recorded.at !== undefined ? Date.parse(recorded.at) : Date.parse(facts.createdAt);
  const visit = (ms: number) => {
    const a = assess(facts, new Date(ms), policy);
    // A flag never returns to "none": every later assessment has a postback or a missed deadline.
    if (a.flag === null || a.flag === flag || a.cause === null) return;
    const at = Math.max(ms, lastMs);
    changes.push({ flag: a.flag, previous: flag, at: iso(at), cause: a.cause });
    flag = a.flag;
    lastMs = at;
  };
  let t = Math.min(lastMs, endMs);
  visit(t);
  for (;;) {
    const n = nextDeadline(facts, new Date(t), policy);
    if (!n || n.getTime() > endMs) break;
    t = n.getTime();
    visit(t);
  }
  visit(endMs);
  return changes;
}

/** Which gauges the dispatch counts in at `evalAt`. */
export function gaugeMembership(
  facts: FlagFacts,
  evalAt: Date,
  policy: SlaPolicy,
): { awaitingPostback: boolean; nearDeadline: boolean } {
  const dl = slaDeadlines(facts, policy);
  const awaiting = dl !== undefined && facts.postbacks.length === 0;
  if (!dl || !awaiting) return { awaitingPostback: awaiting, nearDeadline: false };
  const t = evalAt.getTime();
  const near = t >= nearDeadlineAt(Date.parse(facts.createdAt), dl.dueAt) && t <= dl.dueAt;
  return { awaitingPostback: true, nearDeadline: near };
}

/**
 * When to check again if no postback arrives: the next instant the flag would change, or the
 * near-deadline mark if that comes first (the gauge changes there, the flag does not).
 */
export function nextCheckAt(facts: FlagFacts, evalAt: Date, policy: SlaPolicy): Date | null {
  const next = nextDeadline(facts, evalAt, policy);
  const dl = slaDeadlines(facts, policy);
  if (!dl || facts.postbacks.length > 0) return next;
  const near = nearDeadlineAt(Date.parse(facts.createdAt), dl.dueAt);
  if (near > evalAt.getTime() && (!next || near < next.getTime())) return new Date(near);
  return next;
}
