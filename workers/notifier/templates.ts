import { LANGUAGE_INFO, fill, isLanguage, uiStrings } from '../../shared/i18n/index.js';

/**
 * The e-mails the notifier sends, as pure functions of their facts: subject, plain text and
 * HTML (every value escaped). Principal e-mails carry the 'Manage consent' link and the app's
 * contact details, as DPDP notices must say whom to contact about one's data, in the
 * principal's language (shared/i18n, mail set; `dir="rtl"` for Urdu, Kashmiri and Sindhi).
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
  /** The principal's language (one of the 23); English when absent. */
  language?: string | undefined;
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

/** The mail strings of a language, English for any other code. */
const mailText = (language: string | undefined) => uiStrings('mail', language ?? 'en');

/** Purposes as prose: "analytics, marketing"; none named: all of them. */
const list = (purposes: readonly string[], language?: string) =>
  purposes.length ? purposes.join(', ') : mailText(language).allPurposes;

/** `2025-03-01` from an ISO timestamp: dates in e-mails are unambiguous across locales. */
const day = (iso: string) => iso.slice(0, 10);

/**
 * A principal e-mail: the paragraphs, then the 'Manage consent' link, the reference and whom to
 * contact, in `language` (the language the paragraphs are written in; English by default).
 */
export function principalMail(
  m: PrincipalMail,
  subject: string,
  paragraphs: string[],
  why: string,
  language = 'en',
): Rendered {
  const lang = isLanguage(language) ? language : 'en';
  const t = mailText(lang);
  const app = m.app.name;
  const text = [
    ...paragraphs,
    `${t.manage}: ${m.link}`,
    fill(t.reference, { referenceId: m.referenceId }),
    fill(t.contact, { app, email: m.app.contactEmail }),
    `--\n${why}`,
  ].join('\n\n');
  const p = (s: string) => `<p>${escapeHtml(s)}</p>`;
  // The contact sentence with the address as a mailto: link where {email} stands.
  const mailto = `<a href="mailto:${escapeHtml(m.app.contactEmail)}">${escapeHtml(m.app.contactEmail)}</a>`;
  const contact = t.contact
    .split('{email}')
    .map((part) => escapeHtml(fill(part, { app })))
    .join(mailto);
  // dir and lang on <html> and on a wrapper, for clients that drop the document element.
  const attrs = `lang="${lang}" dir="${LANGUAGE_INFO[lang].dir}"`;
  const html = [
    `<!doctype html><html ${attrs}><head><meta charset="utf-8">`,
    `<title>${escapeHtml(subject)}</title></head><body><div ${attrs}>`,
    ...paragraphs.map(p),
    `<p><a href="${escapeHtml(m.link)}">${escapeHtml(t.manage)}</a></p>`,
    p(fill(t.reference, { referenceId: m.referenceId })),
    `<p>${contact}</p>`,
    `<hr><p><small>${escapeHtml(why)}</small></p>`,
    '</div></body></html>',
  ].join('');
  return { subject, text, html };
}

export function grantRequestMail(m: PrincipalMail): Rendered {
  const t = mailText(m.language);
  const v = { app: m.app.name };
  return principalMail(
    m,
    fill(t.grantSubject, v),
    [fill(t.grantBody1, v), fill(t.grantBody2, v)],
    fill(t.grantWhy, v),
    m.language,
  );
}

export function expiryReminderMail(
  m: PrincipalMail & { purposes: readonly string[]; expiresAt: string | null },
): Rendered {
  const t = mailText(m.language);
  const v = {
    app: m.app.name,
    purposes: list(m.purposes, m.language),
    date: m.expiresAt ? day(m.expiresAt) : '',
  };
  const on = m.expiresAt !== null;
  return principalMail(
    m,
    fill(on ? t.expirySubjectOn : t.expirySubjectSoon, v),
    [fill(on ? t.expiryBodyOn : t.expiryBodySoon, v), fill(t.expiryBody2, v)],
    fill(t.expiryWhy, v),
    m.language,
  );
}

export function erasureAckMail(m: PrincipalMail & { purposes: readonly string[] }): Rendered {
  const t = mailText(m.language);
  const v = { app: m.app.name, purposes: list(m.purposes, m.language) };
  return principalMail(
    m,
    fill(t.erasureSubject, v),
    [fill(t.erasureBody1, v), fill(t.erasureBody2, v)],
    fill(t.erasureWhy, v),
    m.language,
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
