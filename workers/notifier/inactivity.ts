import { AppError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import { inactivityWarningSchema } from '../../shared/domain/consent/inactivity-warning.js';
import { mailPrincipal, type NotifierDeps } from './deliver.js';
import { inactivityWarningMail } from './inactivity-templates.js';

/**
 * The inactivity warning (docs/parental-and-inactivity.md) to the principal's stored address,
 * with the 'Manage consent' link: opening it is activity, and so keeps the data. Without an
 * address the e-mail is skipped (logged); the erasure still follows.
 */
export async function mailInactivityWarning(
  d: NotifierDeps,
  raw: unknown,
  log: Logger,
): Promise<void> {
  const parsed = inactivityWarningSchema.safeParse(raw);
  if (!parsed.success)
    throw new AppError(
      'SVC_VALIDATION_FAILED',
      `malformed inactivity warning: ${parsed.error.message}`,
    );
  const n = parsed.data;
  await mailPrincipal(
    d,
    {
      id: n.id,
      kind: 'inactivity_warning',
      appId: n.appId,
      referenceId: n.referenceId,
      render: (m) =>
        inactivityWarningMail({ ...m, eraseAt: n.eraseAt, inactivityDays: n.inactivityDays }),
    },
    log,
  );
}
