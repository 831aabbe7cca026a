import { principalMail, type PrincipalMail, type Rendered } from './templates.js';

/**
 * The inactivity e-mails (docs/parental-and-inactivity.md): the warning before the erasure and
 * the notice after it. English for now; they share the frame (link, reference, contact) of every
 * principal e-mail.
 */

/** `2025-03-01 14:05 UTC`: sandbox apps compress days into minutes, so the time matters too. */
const moment = (iso: string) => `${iso.slice(0, 16).replace('T', ' ')} UTC`;

export function inactivityWarningMail(
  m: PrincipalMail & { eraseAt: string; inactivityDays: number },
): Rendered {
  return principalMail(
    m,
    `Your data held by ${m.app.name} will be erased on ${m.eraseAt.slice(0, 10)}`,
    [
      `${m.app.name} erases the personal data of people who have not used its service for ${m.inactivityDays} days. You have not for a while, so your data will be erased at ${moment(m.eraseAt)}.`,
      `To keep your data, use your account with ${m.app.name}, or open the link below, before then. Nothing else is needed.`,
    ],
    `You receive this notice because your data held by ${m.app.name} is due to be erased for inactivity.`,
  );
}

export function inactivityErasedMail(m: PrincipalMail & { purposes: readonly string[] }): Rendered {
  const purposes = m.purposes.length ? m.purposes.join(', ') : 'every purpose';
  return principalMail(
    m,
    `${m.app.name} has erased your data after a period of inactivity`,
    [
      `As announced, your data held by ${m.app.name} for ${purposes} has been erased because you had not used its service for the period it keeps data of inactive people.`,
      `${m.app.name} has been told to delete this data and must confirm when it has done so.`,
    ],
    `You receive this notice because your data was erased for inactivity.`,
  );
}
