import type { ParsedMail } from 'mailparser';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Language } from '../../shared/domain/types.js';
import { requestGrant } from '../../shared/mail/index.js';
import { CATALOGUES, fill } from '../../shared/i18n/index.js';
import { notifierWorker } from '../../workers/notifier/index.js';
import { startPortalStack, type PortalApp, type PortalStack } from '../portal/fixture.js';
import { addresses, startSmtp } from './smtp.js';

/**
 * Principal e-mails in the principal's language, over a real SMTP server: Tamil text, Urdu
 * right to left, and a 'Manage consent' link that opens the portal in the same language.
 */

let smtp: Awaited<ReturnType<typeof startSmtp>>;
let s: PortalStack;
let shop: PortalApp;

beforeAll(async () => {
  smtp = await startSmtp({ user: 'mailer', pass: 'languages' });
  s = await startPortalStack('mail-languages', {
    workers: [notifierWorker],
    env: { SMTP_URL: smtp.url, MAIL_FROM: 'Consent <consent@svc.test>' },
  });
  shop = await s.createApp();
});
afterAll(async () => {
  await s?.close();
  await smtp?.close();
});

const mailTo = (address: string) =>
  vi.waitFor(
    () => {
      const m = smtp.received.find((x) => addresses(x.to).includes(address));
      expect(m, `a mail to ${address}`).toBeDefined();
      return m!;
    },
    { timeout: 20_000, interval: 50 },
  );

const html = (m: ParsedMail) => (typeof m.html === 'string' ? m.html : '');
/** The link of the HTML part's only non-mailto anchor. */
const link = (m: ParsedMail) =>
  /<a href="(http[^"]+)">/.exec(html(m))?.[1]?.replace(/&amp;/g, '&') ?? '';

/** A grant request to a new principal at `address`, in `language` when given; its e-mail. */
async function grantMail(address: string, language?: Language) {
  const p = await s.createPrincipal(shop, address);
  await requestGrant(s.p.rt, {
    appId: shop.app.appId,
    referenceId: p.referenceId,
    ...(language ? { language } : {}),
  });
  return { referenceId: p.referenceId, m: await mailTo(address) };
}

describe('e-mails in the principal’s language', () => {
  it('in Tamil: Tamil subject and text, and a link to the portal in Tamil', async () => {
    const t = CATALOGUES.ta.mail;
    const { referenceId, m } = await grantMail('tamil@example.test', 'ta');
    expect(m.subject).toBe(fill(t.grantSubject, { app: 'Shop & Co' }));
    expect(m.text).toContain(fill(t.grantBody1, { app: 'Shop & Co' }));
    expect(m.text).toContain(fill(t.reference, { referenceId }));
    expect(m.text).toContain(`${t.manage}: `);
    expect(m.text).toMatch(/[\u0b80-\u0bff]{4}/);
    expect(html(m)).toContain('<html lang="ta" dir="ltr">');
    expect(html(m)).toContain('href="mailto:dpo@shop.example"');
    const url = new URL(link(m));
    expect(`${url.origin}${url.pathname}${url.search}`).toBe(
      `${s.url}/portal/${referenceId}?lang=ta`,
    );
    expect(url.hash).toMatch(/^#token=svc_pt_/);
    const portal = await fetch(link(m));
    expect(portal.status).toBe(200);
    const page = await portal.text();
    expect(page).toContain('<html lang="ta" dir="ltr">');
    expect(page).toContain(CATALOGUES.ta.portal.title);
  });

  it('in Urdu: right to left', async () => {
    const t = CATALOGUES.ur.mail;
    const { m } = await grantMail('urdu@example.test', 'ur');
    expect(m.subject).toBe(fill(t.grantSubject, { app: 'Shop & Co' }));
    expect(html(m)).toContain('<html lang="ur" dir="rtl">');
    expect(html(m)).toContain('<div lang="ur" dir="rtl">');
    expect(html(m)).toContain(`>${t.manage}</a>`);
    expect(new URL(link(m)).search).toBe('?lang=ur');
  });

  it('in English when the principal’s consents name no language', async () => {
    const { m } = await grantMail('plain@example.test');
    expect(m.subject).toBe('Shop & Co asks for your consent');
    expect(html(m)).toContain('<html lang="en" dir="ltr">');
    expect(new URL(link(m)).search).toBe('');
  });
});
