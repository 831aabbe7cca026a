import { loadBatch, getBreach } from '../../shared/storage/breaches/store.js';
import {
  breachBatchSchema,
  breachMailId,
  grievanceMailSchema,
  type BreachBatchMail,
  type GrievanceMail,
} from '../../shared/storage/duties/notifications.js';
import { AppError } from '../../shared/errors.js';
import { getGrievance } from '../../shared/storage/grievances/store.js';
import type { Logger } from '../../shared/logger.js';
import { mailPrincipal, type NotifierDeps } from './deliver.js';
import { breachNoticeMail, grievanceAnsweredMail, grievanceFiledMail } from './duty-templates.js';

/**
 * Grievance and breach e-mails from the `notifications` topic. Each reads the record as stored
 * (the message only names it), then mails through `mailPrincipal`, which sends each message id
 * once however often it is delivered.
 */

async function mailGrievance(d: NotifierDeps, n: GrievanceMail, log: Logger): Promise<void> {
  const g = await getGrievance(d.rt, n.appId, n.grievanceId);
  if (!g) {
    log.warn({ id: n.id, grievanceId: n.grievanceId }, 'e-mail skipped: unknown grievance');
    return;
  }
  const answered = n.type === 'grievance.answered';
  await mailPrincipal(
    d,
    {
      id: n.id,
      kind: answered ? 'grievance_answered' : 'grievance_filed',
      appId: n.appId,
      referenceId: n.referenceId,
      render: (m) =>
        answered
          ? grievanceAnsweredMail({ ...m, grievance: g })
          : grievanceFiledMail({ ...m, grievance: g }),
    },
    log,
  );
}

/**
 * One batch of a breach's principals, mailed one after another under an id per breach and
 * principal: a redelivered batch resumes where it failed and mails nobody twice.
 */
async function mailBreachBatch(d: NotifierDeps, n: BreachBatchMail, log: Logger): Promise<void> {
  const [breach, batch] = await Promise.all([
    getBreach(d.rt, n.appId, n.breachId),
    loadBatch(d.rt, n.appId, n.breachId, n.batch),
  ]);
  if (!breach || !batch) {
    log.warn(
      { id: n.id, breachId: n.breachId, batch: n.batch },
      'breach notices skipped: unknown breach or batch',
    );
    return;
  }
  for (const p of batch)
    await mailPrincipal(
      d,
      {
        id: breachMailId(n.breachId, p.referenceId),
        kind: 'breach_notice',
        appId: n.appId,
        referenceId: p.referenceId,
        render: (m) => breachNoticeMail({ ...m, breach }),
      },
      log,
    );
}

export function mailDuty(d: NotifierDeps, raw: unknown, log: Logger): Promise<void> {
  const type = (raw as { type?: unknown }).type;
  const parsed =
    type === 'breach.notify'
      ? breachBatchSchema.safeParse(raw)
      : grievanceMailSchema.safeParse(raw);
  if (!parsed.success)
    throw new AppError('SVC_VALIDATION_FAILED', `malformed notification: ${parsed.error.message}`);
  const n = parsed.data;
  return n.type === 'breach.notify' ? mailBreachBatch(d, n, log) : mailGrievance(d, n, log);
}
