import { z } from 'zod';

/** Outgoing e-mail and the hosted-portal links it carries. */
export const mailSettings = {
  /** `smtp://user:pass@host:587` or `smtps://…`; unset writes .eml files under MAIL_DIR. */
  SMTP_URL: z.string().url().optional(),
  /** Where .eml files go when SMTP_URL is unset; default `${SVC_HOME or .svc}/mail`. */
  MAIL_DIR: z.string().min(1).optional(),
  MAIL_FROM: z.string().min(3).default('Consent notifications <no-reply@localhost>'),
  /** How long a hosted-portal link in an e-mail stays valid (at most 7 days). */
  PORTAL_LINK_TTL_MS: z.coerce
    .number()
    .int()
    .positive()
    .max(7 * 24 * 3_600_000)
    .default(7 * 24 * 3_600_000),
};
