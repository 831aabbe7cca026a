import { describe, expect, it } from 'vitest';
import { LANGUAGES } from '../../shared/domain/types.js';
import { CATALOGUES, LANGUAGE_INFO, fill } from '../../shared/i18n/index.js';
import { erasureAckMail, escapeHtml, expiryReminderMail, grantRequestMail } from './templates.js';

/** The principal e-mails in each of the 23 languages. */

const app = { name: 'Shop <&> Co', contactEmail: 'dpo@shop.example' };
const base = { app, referenceId: 'SVC-REF-ABCD2345', link: 'https://svc.example/portal/x#token=t' };

const mails = (language: string) => [
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
    const [grant, on, soon, erasure] = mails(lang);
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

  it('is English for an unknown or missing language', () => {
    for (const language of [undefined, 'fr', '__proto__'])
      expect(grantRequestMail({ ...base, language }).subject).toBe(
        'Shop <&> Co asks for your consent',
      );
  });
});
