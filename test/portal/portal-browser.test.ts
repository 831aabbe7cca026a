import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { getTransaction } from '../../shared/domain/consent/index.js';
import { portalLink } from '../../shared/portal/index.js';
import { verifyReceipt } from '../../shared/receipts/receipt.js';
import { keysFromJwks, signingKeys } from '../../shared/signing/keys.js';
import { launchChromium } from '../helpers/chromium.js';
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
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await s?.close();
});

/** Every request the page made, as the server saw its URL (a fragment never reaches it). */
let requested: string[];

async function open(url: string) {
  problems = [];
  requested = [];
  page = await browser.newPage();
  page.on('console', (m) => {
    // Failed loads are checked below by response, where a refused token's 401/403 is expected.
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource'))
      problems.push(m.text());
  });
  page.on('pageerror', (e) => problems.push(e.message));
  page.on('request', (r) => requested.push(r.url()));
  page.on('response', (r) => {
    if (r.status() >= 400 && r.request().resourceType() !== 'document')
      problems.push(`${r.status()} ${new URL(r.url()).pathname}`);
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
    const link = portalLink(s.p.rt.config, shop.app, alice.referenceId, new Date());
    const token = new URLSearchParams(new URL(link).hash.slice(1)).get('token') ?? '';
    expect(token).toMatch(/^svc_pt_/);
    const res = await open(link);
    expect(res?.status()).toBe(200);
    await expect.poll(() => row('marketing').locator('td.state').textContent()).toBe('Given');
    // Whose link it is, from the API: the app's name and contact.
    expect(await page.locator('#app-name').textContent()).toBe('Shop & Co');
    expect(await page.getByRole('link', { name: 'dpo@shop.example' }).getAttribute('href')).toBe(
      'mailto:dpo@shop.example',
    );
    // The token never went to the server in a URL, and left the address bar.
    expect(requested.some((u) => u.includes(token))).toBe(false);
    expect(page.url()).toBe(`${s.url}/portal/${alice.referenceId}`);
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

    // A reload of the tab keeps working (the token is kept for this tab only).
    await page.reload();
    await expect.poll(() => row('analytics').locator('td.state').textContent()).toBe('Erased');
    expect(problems).toEqual([]);
  });

  it('downloads the signed receipt of a transaction, which verifies with the service’s keys', async () => {
    const carol = await s.createPrincipal(shop);
    const txn = carol.transaction.transactionId;
    await open(
      `${s.url}/portal/${carol.referenceId}#token=${s.tokenFor(shop.app.appId, carol.referenceId)}`,
    );
    const button = page.getByRole('button', { name: /^Download the signed receipt/ });
    await expect.poll(() => button.count()).toBe(1);
    const [download] = await Promise.all([page.waitForEvent('download'), button.click()]);
    expect(download.suggestedFilename()).toBe(`consent-receipt-${txn}.json`);
    const receipt = JSON.parse(fs.readFileSync(await download.path(), 'utf8')) as Record<
      string,
      unknown
    >;
    expect(receipt).toMatchObject({ transactionId: txn, referenceId: carol.referenceId });
    const keys = keysFromJwks(signingKeys(s.p.rt.config).jwks);
    expect(verifyReceipt(receipt, keys).ok).toBe(true);
    await expect
      .poll(() => page.getByRole('status').textContent())
      .toBe('The signed receipt was downloaded.');
    expect(requested.filter((u) => u.endsWith(`/transactions/${txn}/receipt`))).toHaveLength(1);
    expect(problems).toEqual([]);
  });

  it('enforces its CSP: an injected inline script does not run', async () => {
    const bob = await s.createPrincipal(shop);
    await open(
      `${s.url}/portal/${bob.referenceId}#token=${s.tokenFor(shop.app.appId, bob.referenceId)}`,
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

  it('says so for an expired link', async () => {
    const token = s.tokenFor(shop.app.appId, alice.referenceId, -1000);
    const res = await open(`${s.url}/portal/${alice.referenceId}#token=${token}`);
    expect(res?.status()).toBe(200);
    await expect
      .poll(() => page.getByRole('alert').textContent())
      .toMatch(/^This link has expired or is no longer valid/);
    expect(await page.locator('table').count()).toBe(0);
    expect(await page.locator('#app-name').textContent()).toBe('');
    await page.screenshot({ path: path.join(SHOTS, 'portal-expired.png'), fullPage: true });
    expect(problems).toEqual([`401 /portal/api/${alice.referenceId}/session`]);
  });

  it('says so for a forged link', async () => {
    const good = s.tokenFor(shop.app.appId, alice.referenceId);
    const [body, sig] = good.slice('svc_pt_'.length).split('.') as [string, string];
    const claims = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
    const payload = Buffer.from(JSON.stringify({ ...claims, e: claims.e + 86_400_000 })).toString(
      'base64url',
    );
    await open(`${s.url}/portal/${alice.referenceId}#token=svc_pt_${payload}.${sig}`);
    await expect
      .poll(() => page.getByRole('alert').textContent())
      .toBe('This link is not valid for this page.');
    expect(await page.locator('table').count()).toBe(0);
    await page.screenshot({ path: path.join(SHOTS, 'portal-forged.png'), fullPage: true });
    expect(problems).toEqual([`403 /portal/api/${alice.referenceId}/session`]);
  });

  it('says so for a link without a token, and refuses an old link with the token in the query', async () => {
    await open(`${s.url}/portal/${alice.referenceId}`);
    await expect
      .poll(() => page.getByRole('alert').textContent())
      .toMatch(/^This link is incomplete/);
    expect(requested.filter((u) => u.includes('/portal/api/'))).toEqual([]);
    await page.close();
    const token = s.tokenFor(shop.app.appId, alice.referenceId);
    const res = await open(`${s.url}/portal/${alice.referenceId}?token=${token}`);
    expect(res?.status()).toBe(400);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe(
      'This link is no longer accepted',
    );
    expect(await page.locator('table').count()).toBe(0);
    expect(problems).toEqual([]);
  });
});
