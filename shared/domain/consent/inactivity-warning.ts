import { createHash } from 'node:crypto';
import { z } from 'zod';
import { patterns } from '../ids.js';

/**
 * The inactivity warning on the `notifications` topic (docs/parental-and-inactivity.md): the
 * timers worker queues it, the notifier e-mails the principal's stored address. Its id is
 * derived from the principal and the activity it warns about, so the worker may queue it again
 * (a retried timer) and the notifier still sends it once.
 */
export const INACTIVITY_WARNING = 'inactivity.warning';

export const inactivityWarningSchema = z.object({
  id: z.string().min(1).max(64),
  type: z.literal(INACTIVITY_WARNING),
  appId: z.string().regex(patterns.appId),
  referenceId: z.string().regex(patterns.referenceId),
  /** When the data will be erased unless the principal is active before then. */
  eraseAt: z.string(),
  /** The app's policy, for the e-mail's wording. */
  inactivityDays: z.number().int().positive(),
  createdAt: z.string(),
});
export type InactivityWarning = z.infer<typeof inactivityWarningSchema>;

/** `ntf_inact_` + 32 hex: one id per principal and last activity. */
export function inactivityWarningId(appId: string, referenceId: string, lastActiveMs: number) {
  const h = createHash('sha256').update(`${appId}|${referenceId}|${lastActiveMs}`).digest('hex');
  return `ntf_inact_${h.slice(0, 32)}`;
}
