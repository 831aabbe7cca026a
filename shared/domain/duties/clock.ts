import { nearDeadlineAt } from '../deadlines.js';

/**
 * The clock of a DPDP duty with a legal deadline: a grievance to answer (Rule 14, at most 90
 * days) or a breach report owed to the Data Protection Board (Rule 7(2), 72 hours). Pure: the
 * time is a parameter, so the API, the timers worker and the tests compute the same flag.
 *
 * Flags, like postback flags: none while there is time; `at_risk` in the last 20 % of the window
 * (the same "near the deadline" as postbacks); `breach` once the deadline has passed. Doing the
 * duty freezes the flag at that instant: on time gives `ok`, late stays `breach`.
 */

export const DUTY_FLAGS = ['ok', 'at_risk', 'breach'] as const;
export type DutyFlag = (typeof DUTY_FLAGS)[number];

export type DutyCause = 'near_deadline' | 'deadline_passed' | 'done_on_time' | 'done_late';

export interface DutyDeadlines {
  /** Epoch ms: from this instant on, an open duty is at_risk. */
  atRiskAt: number;
  /** Epoch ms: the last instant the duty is on time; later it is a breach. */
  dueAt: number;
}

/**
 * The deadlines of a duty opened at `openedAtMs` with a window of `windowMs`. A sandbox app's
 * `slaTimeScale` divides the window, as it does postback windows, so a 90-day grievance window
 * with scale 7,776,000 lasts a second.
 */
export function dutyDeadlines(openedAtMs: number, windowMs: number, scale = 1): DutyDeadlines {
  const dueAt = Math.floor(openedAtMs + windowMs / Math.max(1, scale));
  return { dueAt, atRiskAt: nearDeadlineAt(openedAtMs, dueAt) };
}

export interface DutyFacts extends DutyDeadlines {
  /** Epoch ms the duty was done (grievance answered, report filed); undefined while open. */
  doneAt?: number | undefined;
}

/** The flag at `nowMs` (null: open, with time left) and the rule that decided it. */
export function dutyFlag(
  d: DutyFacts,
  nowMs: number,
): { flag: DutyFlag | null; cause: DutyCause | null } {
  if (d.doneAt !== undefined && d.doneAt <= nowMs)
    return d.doneAt <= d.dueAt
      ? { flag: 'ok', cause: 'done_on_time' }
      : { flag: 'breach', cause: 'done_late' };
  if (nowMs > d.dueAt) return { flag: 'breach', cause: 'deadline_passed' };
  if (nowMs >= d.atRiskAt) return { flag: 'at_risk', cause: 'near_deadline' };
  return { flag: null, cause: null };
}

/**
 * When the flag of a still-open duty next changes (epoch ms), or null when it never will by
 * the clock alone (done, or already past its deadline). Timers schedule themselves here.
 */
export function nextDutyCheck(d: DutyFacts, nowMs: number): number | null {
  if (d.doneAt !== undefined) return null;
  if (nowMs < d.atRiskAt) return d.atRiskAt;
  if (nowMs <= d.dueAt) return d.dueAt + 1;
  return null;
}
