import { Counter, type Registry } from 'prom-client';
import { getAppCached } from '../../shared/domain/apps.js';
import { loadPrincipal } from '../../shared/storage/consents/repository.js';
import type { App } from '../../shared/domain/types.js';
import type { Logger } from '../../shared/logger.js';
import type { Mailer } from '../../shared/mail/index.js';
import { getOrCreate } from '../../shared/metrics.js';
import { portalLink } from '../../shared/portal/index.js';
import type { Runtime } from '../../shared/runtime.js';
import { mailLanguage } from './language.js';
import type { PrincipalMail, Rendered } from './templates.js';

/** The consumer name under which handled message ids are kept (rt.processed). */
export const CONSUMER = 'notifier';

export type MailKind =
  | 'grant_request'
  | 'expiry_reminder'
  | 'erasure_ack'
  | 'endpoint_disabled'
  | 'grievance_filed'
  | 'grievance_answered'
  | 'breach_notice'
  | 'inactivity_warning';
type Outcome = 'sent' | 'skipped' | 'duplicate';

export interface NotifierDeps {
  rt: Runtime;
  mailer: Mailer;
  now: () => Date;
  count(kind: MailKind, outcome: Outcome): void;
}

export function emailCounter(registry: Registry): NotifierDeps['count'] {
  const c = getOrCreate(
    registry,
    'svc_notifier_emails_total',
    () =>
      new Counter({
        name: 'svc_notifier_emails_total',
        help: 'Notification e-mails by kind and outcome (sent, skipped, duplicate)',
        labelNames: ['kind', 'outcome'],
        registers: [registry],
      }),
  );
  return (kind, outcome) => c.inc({ kind, outcome });
}

/**
 * Runs `fn` once per message id. The id is claimed before the e-mail leaves and released if
 * sending fails, so a failure is retried and a redelivered message is not mailed twice; a
 * crash in between loses at most that one e-mail (preferred to mailing a person repeatedly).
 */
export async function once(
  d: NotifierDeps,
  id: string,
  kind: MailKind,
  fn: () => Promise<Outcome>,
): Promise<void> {
  let outcome: Outcome = 'duplicate';
  await d.rt.processed.runOnce(CONSUMER, id, async () => {
    outcome = await fn();
  });
  d.count(kind, outcome);
}

export interface PrincipalNotice {
  /** Event or notification id: the idempotency key and the Message-ID. */
  id: string;
  kind: MailKind;
  appId: string;
  referenceId: string;
  /** Explicit recipient; else the principal's stored address. */
  to?: string | undefined;
  /** The e-mail's language when the message names one; else see mailLanguage. */
  language?: string | undefined;
  /** The transaction the e-mail is about, whose language it is written in. */
  transactionId?: string | undefined;
  render: (m: PrincipalMail) => Rendered;
}

/**
 * An e-mail to a data principal with the 'Manage consent' link and the app's contact details.
 * Skipped (logged, not retried) when the app is gone or no address is known.
 */
export function mailPrincipal(d: NotifierDeps, n: PrincipalNotice, log: Logger): Promise<void> {
  return once(d, n.id, n.kind, async () => {
    const app: App | undefined = await getAppCached(d.rt, n.appId);
    const facts = { id: n.id, kind: n.kind, appId: n.appId, referenceId: n.referenceId };
    if (!app) {
      log.warn(facts, 'e-mail skipped: unknown app');
      return 'skipped';
    }
    const to = n.to ?? (await loadPrincipal(d.rt, app.appId, n.referenceId))?.email;
    if (!to) {
      log.info(facts, 'e-mail skipped: no e-mail address for this principal');
      return 'skipped';
    }
    const language = await mailLanguage(d.rt, app.appId, n.referenceId, n);
    const link = portalLink(d.rt.config, app, n.referenceId, d.now(), language);
    const mail = n.render({ app, referenceId: n.referenceId, link, language });
    await d.mailer.send({ id: n.id, to, replyTo: app.contactEmail, ...mail });
    log.info(facts, 'e-mail sent');
    return 'sent';
  });
}
