import { describe, expect, it } from 'vitest';
import {
  endpointDisabledMail,
  erasureAckMail,
  escapeHtml,
  expiryReminderMail,
  grantRequestMail,
} from './templates.js';

const app = { name: 'Evil <b>"Shop"</b>', contactEmail: 'dpo@shop.example' };
const base = {
  app,
  referenceId: 'SVC-REF-ABCD2345',
  link: 'https://svc.example/portal/SVC-REF-ABCD2345?token=a&b=<c>',
};

describe('e-mail templates', () => {
  it.each([
    ['grant request', grantRequestMail(base), 'Evil <b>"Shop"</b> asks for your consent'],
    [
      'expiry reminder',
      expiryReminderMail({ ...base, purposes: ['marketing'], expiresAt: '2031-03-01T10:00:00Z' }),
      'Your consent to Evil <b>"Shop"</b> expires on 2031-03-01',
    ],
    [
      'erasure acknowledgement',
      erasureAckMail({ ...base, purposes: ['analytics', 'marketing'] }),
      'Evil <b>"Shop"</b> has received your erasure request',
    ],
  ])('%s: subject, link and contact in text and HTML, HTML escaped', (_n, m, subject) => {
    expect(m.subject).toBe(subject);
    expect(m.text).toContain(`Manage consent: ${base.link}`);
    expect(m.text).toContain('Contact Evil <b>"Shop"</b> at dpo@shop.example.');
    expect(m.text).toContain('Your reference: SVC-REF-ABCD2345');
    expect(m.html).toContain(`<a href="${escapeHtml(base.link)}">Manage consent</a>`);
    expect(m.html).toContain('Evil &lt;b&gt;&quot;Shop&quot;&lt;/b&gt;');
    expect(m.html).not.toContain('<b>');
    expect(m.html).toContain('href="mailto:dpo@shop.example"');
  });

  it('names the purposes and the expiry date, or says "soon" without one', () => {
    const m = expiryReminderMail({ ...base, purposes: ['a', 'b'], expiresAt: null });
    expect(m.subject).toBe('Your consent to Evil <b>"Shop"</b> expires soon');
    expect(m.text).toContain('for a, b expires soon');
  });

  it('tells the app what was disabled and why, without a consent link', () => {
    const m = endpointDisabledMail({
      app: { ...app, appId: 'app_X' },
      url: 'https://shop.example/hook',
      reason: 'gone',
      disabledAt: '2030-01-01T00:00:00.000Z',
    });
    expect(m.text).toContain('(app_X), https://shop.example/hook, was disabled at 2030-01-01');
    expect(m.text).toContain('Reason: gone.');
    expect(m.text).not.toContain('Manage consent');
    expect(m.html).not.toContain('<b>');
  });
});
