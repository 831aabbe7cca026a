import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { getTransaction } from '../../shared/domain/consent/index.js';
import { portalLink } from '../../shared/portal/index.js';
import { startPortalStack, type PortalApp, type PortalStack, type Principal } from './fixture.js';

/** The hosted portal in real Chromium (Debian's /usr/bin/chromium), against the real stack. */

const SHOTS = path.resolve('test-results/screenshots');

let s: PortalStack;
let shop: PortalApp;
let alice: Principal;
let browser: Browser;
let page: Page;
/** What the browser reported: console errors (CSP violations among them) and page errors. */
let problems: string[];

beforeAll(async () => {
  fs.mkdirSync(SHOTS, { recursive: true });
  s = await startPortalStack('portal-browser');
  shop = await s.createApp();
  alice = await s.createPrincipal(shop);
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
});

afterAll(async () => {
  await browser?.close();
  await s?.close();
});

async function open(url: string) {
  problems = [];
  page = await browser.newPage();
  page.on('console', (m) => {
    // Failed loads are checked below by response, where the page's own 401/403 is expected.
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource'))
      problems.push(m.text());
  });
  page.on('pageerror', (e) => problems.push(e.message));
  page.on('response', (r) => {
    if (r.status() >= 400 && r.request().resourceType() !== 'document')
      problems.push(`${r.status()} ${r.url()}`);
  });
  return page.goto(url);
}

afterEach(async () => {
  await page?.close();
});

const row = (purpose: string) =>
  page.locator('tr', { has: page.getByRole('rowheader', { name: purpose }) });

describe('the hosted portal in Chromium', () => {
  it('shows the consents and withdraws one by a click, then erases one with the keyboard', async () => {
    const res = await open(portalLink(s.p.rt.config, shop.app, alice.referenceId, new Date()));
    expect(res?.status()).toBe(200);
    await expect.poll(() => row('marketing').locator('td.state').textContent()).toBe('Given');
    await page.screenshot({ path: path.join(SHOTS, 'portal-loaded.png'), fullPage: true });

    await page.getByRole('button', { name: 'Withdraw for marketing' }).click();
    await expect.poll(() => row('marketing').locator('td.state').textContent()).toBe('Withdrawn');
    expect(await page.getByRole('status').textContent()).toBe('Consent for marketing withdrawn.');
    expect(await page.locator('.badge').first().textContent()).toBe('Partly withdrawn');
    // Focus stays in the re-rendered section (its heading), not lost to the body.
    expect(await page.evaluate(() => document.activeElement?.tagName)).toBe('H2');
    await page.screenshot({ path: path.join(SHOTS, 'portal-withdrawn.png'), fullPage: true });
    const txn = alice.transaction.transactionId;
    const stored = await getTransaction(s.p.rt, shop.app.appId, txn);
    expect(stored?.records.find((r) => r.purpose === 'marketing')?.state).toBe('revoked');
    expect(await page.getByRole('button', { name: 'Give consent for marketing' }).count()).toBe(1);

    // Keyboard only: focus the erase button, press Enter, accept the confirmation.
    page.once('dialog', (d) => void d.accept());
    await page.getByRole('button', { name: 'Erase for analytics' }).focus();
    await page.keyboard.press('Enter');
    await expect.poll(() => row('analytics').locator('td.state').textContent()).toBe('Erased');
    const after = await getTransaction(s.p.rt, shop.app.appId, txn);
    expect(after?.records.find((r) => r.purpose === 'analytics')?.state).toBe('erased');
    expect(problems).toEqual([]);
  });

  it('enforces its CSP: an injected inline script does not run', async () => {
    const bob = await s.createPrincipal(shop);
    await open(
      `${s.url}/portal/${bob.referenceId}?token=${s.tokenFor(shop.app.appId, bob.referenceId)}`,
    );
    await expect.poll(() => page.locator('table').count()).toBe(1);
    const ran = await page.evaluate(() => {
      const el = document.createElement('script');
      el.textContent = 'document.body.dataset.inline = "ran"';
      document.body.append(el);
      return document.body.dataset.inline === 'ran';
    });
    expect(ran).toBe(false);
    await expect.poll(() => problems.some((p) => p.includes('Content Security Policy'))).toBe(true);
  });

  it('shows the expiry page for an expired link', async () => {
    const token = s.tokenFor(shop.app.appId, alice.referenceId, -1000);
    const res = await open(`${s.url}/portal/${alice.referenceId}?token=${token}`);
    expect(res?.status()).toBe(401);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe(
      'This link has expired',
    );
    expect(await page.locator('table').count()).toBe(0);
    await page.screenshot({ path: path.join(SHOTS, 'portal-expired.png'), fullPage: true });
    expect(problems).toEqual([]);
  });

  it('shows the invalid-link page for a forged link', async () => {
    const good = s.tokenFor(shop.app.appId, alice.referenceId);
    const [v, , sig] = good.split('.');
    const payload = Buffer.from(
      JSON.stringify({ a: shop.app.appId, r: alice.referenceId, e: 9_999_999_999 }),
    ).toString('base64url');
    const res = await open(`${s.url}/portal/${alice.referenceId}?token=${v}.${payload}.${sig}`);
    expect(res?.status()).toBe(403);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe(
      'This link is not valid',
    );
    expect(await page.locator('table').count()).toBe(0);
    await page.screenshot({ path: path.join(SHOTS, 'portal-forged.png'), fullPage: true });
    expect(problems).toEqual([]);
  });
});
