import { fill, uiStrings } from '../../shared/i18n/index.js';
import { principalMail, type PrincipalMail, type Rendered } from './templates.js';

/**
 * The inactivity e-mails (docs/parental-and-inactivity.md): the warning before the erasure and
 * the notice after it. In the principal's language (shared/i18n, mail set); they share the frame (link, reference, contact) of every
 * principal e-mail.
 */

/** `2025-03-01 14:05 UTC`: sandbox apps compress days into minutes, so the time matters too. */
const moment = (iso: string) => `${iso.slice(0, 16).replace('T', ' ')} UTC`;

export function inactivityWarningMail(
  m: PrincipalMail & { eraseAt: string; inactivityDays: number },
): Rendered {
  const t = uiStrings('mail', m.language ?? 'en');
  const v = {
    app: m.app.name,
    date: m.eraseAt.slice(0, 10),
    days: m.inactivityDays,
    moment: moment(m.eraseAt),
  };
  return principalMail(
    m,
    fill(t.inactivityWarnSubject, v),
    [fill(t.inactivityWarn1, v), fill(t.inactivityWarn2, v)],
    fill(t.inactivityWarnWhy, v),
    m.language,
  );
}

export function inactivityErasedMail(m: PrincipalMail & { purposes: readonly string[] }): Rendered {
  const t = uiStrings('mail', m.language ?? 'en');
  const v = {
    app: m.app.name,
    purposes: m.purposes.length ? m.purposes.join(', ') : t.allPurposes,
  };
  return principalMail(
    m,
    fill(t.inactivityErasedSubject, v),
    [fill(t.inactivityErased1, v), fill(t.erasureBody2, v)],
    fill(t.inactivityErasedWhy, v),
    m.language,
  );
}
