/**
 * The e-mails the notifier sends, as pure functions of their facts: subject, plain text and
 * HTML (every value escaped). Principal e-mails carry the 'Manage consent' link and the app's
 * contact details, as DPDP notices must say whom to contact about one's data.
 */

export interface Rendered {
  subject: string;
  text: string;
  html: string;
}

export interface AppFacts {
  name: string;
  contactEmail: string;
}

export interface PrincipalMail {
  app: AppFacts;
  referenceId: string;
  /** The 'Manage consent' link (hosted portal with a token, or the app's own URL). */
  link: string;
}

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

/** Purposes as prose: "analytics, marketing". */
const list = (purposes: readonly string[]) => (purposes.length ? purposes.join(', ') : 'all');

/** `2025-03-01` from an ISO timestamp: dates in e-mails are unambiguous across locales. */
const day = (iso: string) => iso.slice(0, 10);

function principalMail(
  m: PrincipalMail,
  subject: string,
  paragraphs: string[],
  why: string,
): Rendered {
  const contact = `Questions about your data? Contact ${m.app.name} at ${m.app.contactEmail}.`;
  const text = [
    ...paragraphs,
    `Manage consent: ${m.link}`,
    `Your reference: ${m.referenceId}`,
    contact,
    `--\n${why}`,
  ].join('\n\n');
  const p = (s: string) => `<p>${escapeHtml(s)}</p>`;
  const html = [
    '<!doctype html><html lang="en"><head><meta charset="utf-8">',
    `<title>${escapeHtml(subject)}</title></head><body>`,
    ...paragraphs.map(p),
    `<p><a href="${escapeHtml(m.link)}">Manage consent</a></p>`,
    p(`Your reference: ${m.referenceId}`),
    `<p>Questions about your data? Contact ${escapeHtml(m.app.name)} at `,
    `<a href="mailto:${escapeHtml(m.app.contactEmail)}">${escapeHtml(m.app.contactEmail)}</a>.</p>`,
    `<hr><p><small>${escapeHtml(why)}</small></p>`,
    '</body></html>',
  ].join('');
  return { subject, text, html };
}

export function grantRequestMail(m: PrincipalMail): Rendered {
  return principalMail(
    m,
    `${m.app.name} asks for your consent`,
    [
      `${m.app.name} would like your consent to process your personal data.`,
      'Use the link below to see what is asked and to give or refuse your consent. You can withdraw it at any time, as easily as you gave it.',
    ],
    `You receive this e-mail because ${m.app.name} asked for your consent.`,
  );
}

export function expiryReminderMail(
  m: PrincipalMail & { purposes: readonly string[]; expiresAt: string | null },
): Rendered {
  const when = m.expiresAt ? ` on ${day(m.expiresAt)}` : ' soon';
  return principalMail(
    m,
    `Your consent to ${m.app.name} expires${when}`,
    [
      `Your consent to ${m.app.name} for ${list(m.purposes)} expires${when}.`,
      `After that, ${m.app.name} stops processing your data for these purposes unless you give your consent again.`,
    ],
    `You receive this reminder because you gave consent to ${m.app.name}.`,
  );
}

export function erasureAckMail(m: PrincipalMail & { purposes: readonly string[] }): Rendered {
  return principalMail(
    m,
    `${m.app.name} has received your erasure request`,
    [
      `Your request to erase your data held by ${m.app.name} for ${list(m.purposes)} has been recorded.`,
      `${m.app.name} has been told to delete this data and must confirm when it has done so.`,
    ],
    `You receive this acknowledgement because an erasure of your data was requested.`,
  );
}

export function endpointDisabledMail(m: {
  app: AppFacts & { appId: string };
  url: string | undefined;
  reason: string;
  disabledAt: string | undefined;
}): Rendered {
  const subject = `Webhook deliveries to ${m.app.name} are stopped`;
  const lines = [
    `The webhook endpoint of ${m.app.name} (${m.app.appId})${m.url ? `, ${m.url},` : ''} was disabled${m.disabledAt ? ` at ${m.disabledAt}` : ''}. Reason: ${m.reason}.`,
    'Consent events are not delivered to it until it is enabled again, and postbacks owed for them are not being received, which affects your compliance record.',
    'Fix the endpoint, then enable it again from the console or the admin API.',
  ];
  const html = [
    '<!doctype html><html lang="en"><head><meta charset="utf-8">',
    `<title>${escapeHtml(subject)}</title></head><body>`,
    ...lines.map((l) => `<p>${escapeHtml(l)}</p>`),
    '</body></html>',
  ].join('');
  return { subject, text: lines.join('\n\n'), html };
}
