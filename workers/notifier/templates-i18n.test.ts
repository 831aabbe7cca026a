import { describe, expect, it } from 'vitest';
import { LANGUAGES } from '../../shared/domain/types.js';
import { CATALOGUES, LANGUAGE_INFO, fill } from '../../shared/i18n/index.js';
import type { Breach } from '../../shared/domain/duties/breaches.js';
import type { Grievance } from '../../shared/domain/duties/grievances.js';
import { breachNoticeMail, grievanceAnsweredMail, grievanceFiledMail } from './duty-templates.js';
import { inactivityErasedMail, inactivityWarningMail } from './inactivity-templates.js';
import { erasureAckMail, escapeHtml, expiryReminderMail, grantRequestMail } from './templates.js';

/** The principal e-mails in each of the 23 languages. */

const app = { name: 'Shop <&> Co', contactEmail: 'dpo@shop.example' };
const base = { app, referenceId: 'SVC-REF-ABCD2345', link: 'https://svc.example/portal/x#token=t' };

/** Only the fields the e-mails read. */
const grievance = {
  grievanceId: 'grv_01J0000000000000000000000A',
  subject: 'Shared <data>',
  createdAt: '2030-01-01T10:00:00.000Z',
  dueAt: '2030-04-01T10:00:00.000Z',
  answer: 'We stopped sharing it.',
  resolution: 'resolved',
} as Grievance;
const breach = {
  description: 'A backup was exposed.',
  consequences: 'Your address may be known.',
  mitigations: 'Keys rotated.',
  steps: 'Beware of calls.',
  contact: { name: 'DPO', email: 'breach@shop.example', phone: null },
  detectedAt: '2030-01-02T08:00:00.000Z',
} as unknown as Breach;

const mails = (language: string) => [
  ...dutyMails(language),
  grantRequestMail({ ...base, language }),
  expiryReminderMail({
    ...base,
    language,
    purposes: ['marketing'],
    expiresAt: '2031-03-01T10:00:00Z',
  }),
  expiryReminderMail({ ...base, language, purposes: [], expiresAt: null }),
  erasureAckMail({ ...base, language, purposes: ['analytics', 'marketing'] }),
];

/** The grievance, breach and inactivity e-mails (first in `mails`). */
const dutyMails = (language: string) => [
  grievanceFiledMail({ ...base, language, grievance }),
  grievanceAnsweredMail({ ...base, language, grievance }),
  grievanceAnsweredMail({ ...base, language, grievance: { ...grievance, resolution: 'rejected' } }),
  breachNoticeMail({ ...base, language, breach }),
  inactivityWarningMail({
    ...base,
    language,
    eraseAt: '2030-05-01T10:30:00Z',
    inactivityDays: 365,
  }),
  inactivityErasedMail({ ...base, language, purposes: [] }),
];

describe('principal e-mails in every language', () => {
  it.each(LANGUAGES)('%s: own strings, placeholders filled, lang and dir set', (lang) => {
    const t = CATALOGUES[lang].mail;
    const dir = LANGUAGE_INFO[lang].dir;
    for (const m of mails(lang)) {
      for (const part of [m.subject, m.text, m.html]) expect(part).not.toMatch(/\{\w+\}/);
      expect(m.text).toContain(`${t.manage}: ${base.link}`);
      expect(m.text).toContain(fill(t.reference, { referenceId: base.referenceId }));
      expect(m.text).toContain(fill(t.contact, { app: app.name, email: app.contactEmail }));
      expect(m.html).toContain(`<html lang="${lang}" dir="${dir}">`);
      expect(m.html).toContain(`<div lang="${lang}" dir="${dir}">`);
      expect(m.html).toContain(`<a href="${escapeHtml(base.link)}">${escapeHtml(t.manage)}</a>`);
      expect(m.html).toContain('<a href="mailto:dpo@shop.example">dpo@shop.example</a>');
      expect(m.html).toContain(escapeHtml(app.name));
      expect(m.html).not.toContain('<&>');
    }
    const [grant, on, soon, erasure] = mails(lang).slice(dutyMails(lang).length);
    expect(grant!.subject).toBe(fill(t.grantSubject, { app: app.name }));
    expect(on!.subject).toBe(fill(t.expirySubjectOn, { app: app.name, date: '2031-03-01' }));
    expect(soon!.text).toContain(
      fill(t.expiryBodySoon, { app: app.name, purposes: t.allPurposes }),
    );
    expect(erasure!.text).toContain('analytics, marketing');
  });

  it('writes Tamil in Tamil and Urdu right to left', () => {
    const ta = grantRequestMail({ ...base, language: 'ta' });
    expect(ta.subject).toBe('Shop <&> Co உங்கள் ஒப்புதலைக் கேட்கிறது');
    expect(ta.text).toMatch(/[\u0b80-\u0bff]/);
    const ur = erasureAckMail({ ...base, language: 'ur', purposes: ['marketing'] });
    expect(ur.html).toContain('dir="rtl"');
    expect(ur.subject).toMatch(/[\u0600-\u06ff]/);
  });

  it('fills the grievance, breach and inactivity e-mails with their facts', () => {
    const [filed, answered, rejected, notice, warning, erased] = dutyMails('hi');
    const t = CATALOGUES.hi.mail;
    const v = { app: app.name, subject: 'Shared <data>', id: grievance.grievanceId };
    expect(filed!.text).toContain(fill(t.grievanceFiled1, { ...v, date: '2030-01-01' }));
    expect(answered!.text).toContain(fill(t.grievanceResolved, v));
    expect(rejected!.text).toContain(fill(t.grievanceRejected, v));
    expect(answered!.text).toContain('We stopped sharing it.');
    expect(notice!.text).toContain(fill(t.breachContact, { contact: 'DPO, breach@shop.example' }));
    expect(warning!.text).toContain('2030-05-01 10:30 UTC');
    expect(warning!.subject).toBe(
      fill(t.inactivityWarnSubject, { app: app.name, date: '2030-05-01' }),
    );
    expect(erased!.text).toContain(t.allPurposes);
    expect(filed!.html).not.toContain('<data>');
  });

  it('is English for an unknown or missing language', () => {
    for (const language of [undefined, 'fr', '__proto__'])
      expect(grantRequestMail({ ...base, language }).subject).toBe(
        'Shop <&> Co asks for your consent',
      );
  });
});
