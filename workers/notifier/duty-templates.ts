import type { Breach } from '../../shared/breaches/model.js';
import type { Grievance } from '../../shared/grievances/model.js';
import { principalMail, type PrincipalMail, type Rendered } from './templates.js';

/**
 * The e-mails of grievances (filed, answered) and breaches (the notice to each affected
 * principal), as pure functions of their facts, in the layout of every principal e-mail.
 */

/** `2025-03-01` from an ISO timestamp: dates in e-mails are unambiguous across locales. */
const day = (iso: string) => iso.slice(0, 10);

export function grievanceFiledMail(m: PrincipalMail & { grievance: Grievance }): Rendered {
  const g = m.grievance;
  return principalMail(
    m,
    `${m.app.name} has received your grievance`,
    [
      `Your grievance "${g.subject}" (${g.grievanceId}) was received by ${m.app.name} on ${day(g.createdAt)}.`,
      `${m.app.name} must answer it by ${day(g.dueAt)}. You will get an e-mail when it does.`,
      'If your grievance is not resolved, you may complain to the Data Protection Board of India.',
    ],
    'You receive this e-mail because a grievance was filed in your name.',
  );
}

export function grievanceAnsweredMail(m: PrincipalMail & { grievance: Grievance }): Rendered {
  const g = m.grievance;
  const outcome = g.resolution === 'rejected' ? 'did not uphold' : 'has resolved';
  return principalMail(
    m,
    `${m.app.name} has answered your grievance`,
    [
      `${m.app.name} ${outcome} your grievance "${g.subject}" (${g.grievanceId}). Its answer:`,
      g.answer ?? '',
      'If you are not satisfied with this answer, you may complain to the Data Protection Board of India.',
    ],
    'You receive this e-mail because you filed a grievance.',
  );
}

/** The five contents the Rules require (Rule 7(1)): each under its own heading. */
export function breachNoticeMail(m: PrincipalMail & { breach: Breach }): Rendered {
  const b = m.breach;
  const c = b.contact;
  return principalMail(
    m,
    `Important: a personal data breach at ${m.app.name}`,
    [
      `${m.app.name} is informing you of a personal data breach that affects your personal data. It was detected on ${day(b.detectedAt)}.`,
      `What happened: ${b.description}`,
      `Likely consequences for you: ${b.consequences}`,
      `What ${m.app.name} has done and is doing to reduce the risk: ${b.mitigations}`,
      `What you can do to protect yourself: ${b.steps}`,
      `Whom to contact about this breach: ${c.name}, ${c.email}${c.phone ? `, ${c.phone}` : ''}.`,
    ],
    `You receive this notice because ${m.app.name} must tell every person whose data a breach affects.`,
  );
}
