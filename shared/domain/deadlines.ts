/** "Near the deadline" is the last 20 % of the window before `dueAt` (the alert's nudge). */
export const NEAR_DEADLINE_FRACTION = 0.2;

/** Rounded up to a whole millisecond, so a check scheduled at the mark finds itself inside it. */
export const nearDeadlineAt = (createdAtMs: number, dueAtMs: number) =>
  Math.ceil(dueAtMs - NEAR_DEADLINE_FRACTION * (dueAtMs - createdAtMs));
