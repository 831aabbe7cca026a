import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CATALOGUES } from '../../shared/i18n/index.js';
import { portalLink } from '../../shared/portal/index.js';
import { launchChromium } from '../helpers/chromium.js';
import { startPortalStack, type PortalApp, type PortalStack, type Principal } from './fixture.js';

/** The hosted portal in the 23 languages: chosen by ?lang= or Accept-Language; RTL for Urdu. */

let s: PortalStack;
let shop: PortalApp;
let alice: Principal;
let browser: Browser;

beforeAll(async () => {
  s = await startPortalStack('portal-i18n');
  shop = await s.createApp();
  alice = await s.createPrincipal(shop);
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await s?.close();
});

const page = async (query: string, headers: Record<string, string> = {}) => {
  const r = await fetch(`${s.url}/portal/${alice.referenceId}${query}`, { headers });
  return { status: r.status, vary: r.headers.get('vary'), html: await r.text() };
};

describe('the portal page’s language', () => {
  it('is the one ?lang= names, with its direction', async () => {
    const r = await page('?lang=ur');
    expect(r.status).toBe(200);
    expect(r.html).toContain('<html lang="ur" dir="rtl">');
    expect(r.html).toContain(`<h1>${CATALOGUES.ur.portal.title}</h1>`);
    expect(r.html).toContain(CATALOGUES.ur.portal.skip);
    // The strings portal.js shows travel with the page (HTML-escaped JSON).
    expect(r.html).toContain(`data-i18n="{&quot;title&quot;:&quot;${CATALOGUES.ur.portal.title}`);
  });

  it('else the browser’s Accept-Language, else English', async () => {
    const ta = await page('', { 'accept-language': 'ta-IN,ta;q=0.9,en;q=0.8' });
    expect(ta.html).toContain('<html lang="ta" dir="ltr">');
    expect(ta.html).toContain(CATALOGUES.ta.portal.intro);
    expect(ta.vary).toContain('Accept-Language');
    const fr = await page('?lang=fr', { 'accept-language': 'fr' });
    expect(fr.html).toContain('<html lang="en" dir="ltr">');
    expect(fr.html).toContain('<h1>Manage your consent</h1>');
  });

  it('also for a refused link of the old form', async () => {
    const r = await page('?lang=sd&token=abc');
    expect(r.status).toBe(400);
    expect(r.html).toContain('<html lang="sd" dir="rtl">');
    expect(r.html).toContain(CATALOGUES.sd.portal.oldLinkTitle);
  });
});

describe('the portal in Urdu in Chromium', () => {
  let tab: Page;
  afterAll(async () => {
    await tab?.close();
  });

  it('shows the consents in Urdu, right to left, from a link in Urdu', async () => {
    const link = portalLink(s.p.rt.config, shop.app, alice.referenceId, new Date(), 'ur');
    expect(new URL(link).search).toBe('?lang=ur');
    tab = await browser.newPage();
    const errors: string[] = [];
    tab.on('pageerror', (e) => errors.push(e.message));
    await tab.goto(link);
    const t = CATALOGUES.ur.portal;
    const state = tab.locator('tr', { has: tab.getByRole('rowheader', { name: 'marketing' }) });
    await expect
      .poll(() => state.locator('td.state').textContent(), { timeout: 10_000 })
      .toBe(t.s_granted);
    expect(await tab.evaluate(() => getComputedStyle(document.body).direction)).toBe('rtl');
    expect(await tab.title()).toBe(t.titleApp.replace('{app}', 'Shop & Co'));
    expect(await tab.locator('#intro').textContent()).toBe(
      t.introApp.replace('{app}', 'Shop & Co'),
    );
    const footer = (await tab.locator('#contact').textContent()) ?? '';
    expect(footer).toBe(
      t.contact.replace('{app}', 'Shop & Co').replace('{email}', 'dpo@shop.example'),
    );
    expect(await tab.getByRole('link', { name: 'dpo@shop.example' }).getAttribute('href')).toBe(
      'mailto:dpo@shop.example',
    );
    const revoke = t.opFor.replace('{verb}', t.revoke).replace('{purpose}', 'marketing');
    expect(await tab.getByRole('button', { name: revoke }).count()).toBe(1);
    // Columns run right to left: the purpose column is the rightmost.
    const lefts = await tab
      .locator('thead th')
      .first()
      .evaluate((th) => [...th.parentElement!.children].map((c) => c.getBoundingClientRect().left));
    expect(lefts[0]).toBeGreaterThan(lefts[lefts.length - 1]!);
    await tab.getByRole('button', { name: revoke }).click();
    await expect
      .poll(() => state.locator('td.state').textContent(), { timeout: 10_000 })
      .toBe(t.s_revoked);
    expect(await tab.getByRole('status').textContent()).toBe(
      t.done_revoke.replace('{what}', 'marketing'),
    );
    expect(errors).toEqual([]);
  });
});
