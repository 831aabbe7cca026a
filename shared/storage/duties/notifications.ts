import { z } from 'zod';
import { patterns } from '../../domain/ids.js';
import { ulid } from 'ulid';
import type { OutboxItem } from '../outbox/outbox.js';

/**
 * The e-mails of grievances and breaches, as messages on the `notifications` topic, written in
 * the same commit as the change they announce (never sent inline). The notifier reads the
 * record when it mails, and deduplicates by message id.
 */

export const grievanceMailSchema = z.object({
  id: z.string().min(1).max(64),
  type: z.enum(['grievance.filed', 'grievance.answered']),
  appId: z.string().regex(patterns.appId),
  referenceId: z.string().regex(patterns.referenceId),
  grievanceId: z.string().min(1).max(64),
});
export type GrievanceMail = z.infer<typeof grievanceMailSchema>;

/**
 * One batch of a breach's affected principals to notify. The notifier mails each principal
 * under the id `breachMailId(breachId, referenceId)`, so a batch delivered twice, or a principal
 * named in two batches, still gets one e-mail per breach.
 */
export const breachBatchSchema = z.object({
  id: z.string().min(1).max(64),
  type: z.literal('breach.notify'),
  appId: z.string().regex(patterns.appId),
  breachId: z.string().min(1).max(64),
  batch: z.number().int().min(0),
});
export type BreachBatchMail = z.infer<typeof breachBatchSchema>;

export const DUTY_MAIL_TYPES: ReadonlySet<string> = new Set([
  'grievance.filed',
  'grievance.answered',
  'breach.notify',
]);

export const breachMailId = (breachId: string, referenceId: string) => `${breachId}.${referenceId}`;

/** The outbox message for one e-mail notification, keyed by app id like the others. */
export function notificationItem(
  rt: { topics: { notifications: string } },
  body: Omit<GrievanceMail, 'id'> | Omit<BreachBatchMail, 'id'>,
  nowMs: number,
): OutboxItem {
  const id = `ntf_${ulid()}`;
  return {
    id,
    topic: rt.topics.notifications,
    key: body.appId,
    value: JSON.stringify({ id, ...body }),
    createdAtMs: nowMs,
  };
}
