import type { Breach } from '../../shared/domain/duties/breaches.js';
import type { Grievance } from '../../shared/domain/duties/grievances.js';
import { fill, uiStrings } from '../../shared/i18n/index.js';
import { principalMail, type PrincipalMail, type Rendered } from './templates.js';

/**
 * The e-mails of grievances (filed, answered) and breaches (the notice to each affected
 * principal), as pure functions of their facts, in the layout of every principal e-mail and
 * in the principal's language (shared/i18n, mail set).
 */

const text = (m: PrincipalMail) => uiStrings('mail', m.language ?? 'en');

/** `2025-03-01` from an ISO timestamp: dates in e-mails are unambiguous across locales. */
const day = (iso: string) => iso.slice(0, 10);

export function grievanceFiledMail(m: PrincipalMail & { grievance: Grievance }): Rendered {
  const g = m.grievance;
  const t = text(m);
  const v = {
    app: m.app.name,
    subject: g.subject,
    id: g.grievanceId,
    date: day(g.createdAt),
    due: day(g.dueAt),
  };
  return principalMail(
    m,
    fill(t.grievanceFiledSubject, v),
    [fill(t.grievanceFiled1, v), fill(t.grievanceFiled2, v), t.grievanceEscalate],
    t.grievanceFiledWhy,
    m.language,
  );
}

export function grievanceAnsweredMail(m: PrincipalMail & { grievance: Grievance }): Rendered {
  const g = m.grievance;
  const t = text(m);
  const v = { app: m.app.name, subject: g.subject, id: g.grievanceId };
  const outcome = g.resolution === 'rejected' ? t.grievanceRejected : t.grievanceResolved;
  return principalMail(
    m,
    fill(t.grievanceAnsweredSubject, v),
    [fill(outcome, v), g.answer ?? '', t.grievanceUnsatisfied],
    t.grievanceAnsweredWhy,
    m.language,
  );
}

/** The five contents the Rules require (Rule 7(1)): each under its own heading. */
export function breachNoticeMail(m: PrincipalMail & { breach: Breach }): Rendered {
  const b = m.breach;
  const c = b.contact;
  const t = text(m);
  const app = m.app.name;
  const contact = `${c.name}, ${c.email}${c.phone ? `, ${c.phone}` : ''}`;
  return principalMail(
    m,
    fill(t.breachSubject, { app }),
    [
      fill(t.breachIntro, { app, date: day(b.detectedAt) }),
      fill(t.breachWhat, { text: b.description }),
      fill(t.breachConsequences, { text: b.consequences }),
      fill(t.breachMitigations, { app, text: b.mitigations }),
      fill(t.breachSteps, { text: b.steps }),
      fill(t.breachContact, { contact }),
    ],
    fill(t.breachWhy, { app }),
    m.language,
  );
}
