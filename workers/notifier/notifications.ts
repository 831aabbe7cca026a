import type { Handler } from '../../shared/bus/consumer.js';
import { getAppCached } from '../../shared/domain/apps.js';
import { AppError } from '../../shared/errors.js';
import { notificationSchema, type EndpointDisabled } from '../../shared/mail/index.js';
import type { Logger } from '../../shared/logger.js';
import { DUTY_MAIL_TYPES } from '../../shared/storage/duties/notifications.js';
import { INACTIVITY_WARNING } from '../../shared/domain/consent/inactivity-warning.js';
import { mailPrincipal, once, type NotifierDeps } from './deliver.js';
import { mailInactivityWarning } from './inactivity.js';
import { mailDuty } from './duties.js';
import { endpointDisabledMail, grantRequestMail } from './templates.js';

/**
 * The app's contact: its webhook endpoint was disabled by the dispatcher (docs/webhooks.md,
 * Delivery rules).
 */
function mailEndpointDisabled(d: NotifierDeps, n: EndpointDisabled, log: Logger) {
  return once(d, n.id, 'endpoint_disabled', async () => {
    const app = await getAppCached(d.rt, n.appId);
    // The message names the address; the app (if still there) supplies its name.
    const mail = endpointDisabledMail({
      app: { appId: n.appId, name: app?.name ?? n.appId, contactEmail: n.to },
      url: n.url,
      reason: n.reason,
      disabledAt: n.disabledAt,
    });
    await d.mailer.send({ id: n.id, to: n.to, ...mail });
    log.info({ id: n.id, appId: n.appId }, 'endpoint-disabled e-mail sent');
    return 'sent';
  });
}

/**
 * The `notifications` topic: grant requests, endpoint-disabled notices, the grievance and breach
 * e-mails (duties.ts) and inactivity warnings (inactivity.ts).
 */
export function notificationsHandler(d: NotifierDeps): Handler {
  return async (raw, ctx) => {
    const type = (raw as { type?: unknown } | null)?.type;
    if (typeof type === 'string' && DUTY_MAIL_TYPES.has(type)) return mailDuty(d, raw, ctx.log);
    if (type === INACTIVITY_WARNING) return mailInactivityWarning(d, raw, ctx.log);
    const parsed = notificationSchema.safeParse(raw);
    if (!parsed.success)
      throw new AppError(
        'SVC_VALIDATION_FAILED',
        `malformed notification: ${parsed.error.message}`,
      );
    const n = parsed.data;
    if (n.type === 'endpoint.disabled') return mailEndpointDisabled(d, n, ctx.log);
    await mailPrincipal(
      d,
      {
        id: n.id,
        kind: 'grant_request',
        appId: n.appId,
        referenceId: n.referenceId,
        to: n.to,
        language: n.language,
        render: grantRequestMail,
      },
      ctx.log,
    );
  };
}
