import type { Handler } from '../../shared/bus/consumer.js';
import { consentEventSchema } from '../../shared/domain/consent/index.js';
import { AppError } from '../../shared/errors.js';
import { mailPrincipal, type NotifierDeps } from './deliver.js';
import { inactivityErasedMail } from './inactivity-templates.js';
import { erasureAckMail, expiryReminderMail } from './templates.js';

/** The consent events that e-mail the principal; every other type is left to other consumers. */
const MAILED = new Set(['consent.expiry.reminder', 'data.deleted']);

/** Consent events (docs/webhooks.md, Events): expiry reminders and erasure acknowledgements. */
export function consentEventsHandler(d: NotifierDeps): Handler {
  return async (raw, ctx) => {
    // Most events are not ours: look at the type before paying for full validation.
    const type = (raw as { type?: unknown } | null)?.type;
    if (typeof type !== 'string' || !MAILED.has(type)) return;
    const parsed = consentEventSchema.safeParse(raw);
    if (!parsed.success)
      throw new AppError(
        'SVC_VALIDATION_FAILED',
        `malformed ${type} event: ${parsed.error.message}`,
      );
    const e = parsed.data;
    const purposes = Object.keys(e.data.purposes);
    await mailPrincipal(
      d,
      {
        id: e.id,
        kind: e.type === 'data.deleted' ? 'erasure_ack' : 'expiry_reminder',
        appId: e.appId,
        referenceId: e.data.referenceId,
        transactionId: e.data.consentId,
        render: (m) =>
          e.type !== 'data.deleted'
            ? expiryReminderMail({ ...m, purposes, expiresAt: e.data.expiresAt })
            : e.data.reason === 'inactivity'
              ? inactivityErasedMail({ ...m, purposes })
              : erasureAckMail({ ...m, purposes }),
      },
      ctx.log,
    );
  };
}
