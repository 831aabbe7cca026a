import path from 'node:path';
import type { Page, Request } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getStoredTransaction } from '../../shared/domain/consent/index.js';
import {
  SCREENSHOTS,
  dialogOf,
  isGated,
  noticeBody,
  pageLog,
  poll,
  startWorld,
  widgetReady,
  type BrowserApp,
  type World,
} from './harness.js';

/**
 * Banners per state (docs/api.md, Regions) in real Chromium against the real service: one
 * trigger key with a notice for Maharashtra, one for Karnataka and one for everywhere else;
 * two pages differing only in the script tag's data-region show different banners, and each
 * capture stores its region in the proof of consent.
 */

const KEY = 'newsletter_signup';
const TITLES: Record<string, string> = {
  'IN-MH': 'Maharashtra: we need your consent',
  'IN-KA': 'Karnataka: we need your consent',
};
let world: World;
let app: BrowserApp;
let page: Page;
const notices: Record<string, string> = {};
const pageErrors: Error[] = [];
const configUrls: string[] = [];

function notice(title: string, regions?: string[]) {
  const n = noticeBody({ triggerKey: KEY });
  n.translations.en.title = title;
  return regions ? { ...n, regions } : n;
}

beforeAll(async () => {
  world = await startWorld('regions');
  app = await world.createApp([]);
  const base = `/apps/${app.appId}/notices`;
  notices['IN-MH'] = (
    await world.admin('POST', base, notice(TITLES['IN-MH']!, ['IN-MH']))
  ).noticeId;
  notices['IN-KA'] = (
    await world.admin('POST', base, notice(TITLES['IN-KA']!, ['IN-KA']))
  ).noticeId;
  notices.everywhere = (await world.admin('POST', base, notice('Everywhere else'))).noticeId;
  // One browser context for both pages: one origin, one localStorage, like one visitor.
  page = await world.browser.newPage();
  page.on('pageerror', (e) => pageErrors.push(e));
  page.on('request', (r: Request) => {
    if (r.url().includes('/api/v1/widget/config/')) configUrls.push(r.url());
  });
});
afterAll(async () => {
  await world?.close();
});

const dialog = () => dialogOf(page);

/** Opens the page for `region`, clicks Subscribe, checks the banner, accepts: the consent id. */
async function consentOn(region: 'IN-MH' | 'IN-KA'): Promise<string> {
  await page.goto(world.pages.url(`region-${region.slice(3).toLowerCase()}.html`, app.siteKey));
  await widgetReady(page);
  expect(await page.evaluate(() => window.SvcConsent?.region)).toBe(region);
  expect(await isGated(page, '#signup')).toBe(true);
  await page.click('#signup');
  await dialog().waitFor({ state: 'visible' });
  await poll(() => dialog().getAttribute('aria-busy')).not.toBe('true');
  expect(await dialog().locator('#svc-t').textContent()).toBe(TITLES[region]);
  await page.screenshot({
    path: path.join(SCREENSHOTS, `dialog-region-${region.toLowerCase()}.png`),
  });
  await dialog().getByRole('button', { name: 'Accept all', exact: true }).click();
  await dialog().waitFor({ state: 'detached' });
  // The held click goes on: the form is submitted with the capture's id.
  await page.waitForFunction(
    () => (window as unknown as { __log: { submits: unknown[] } }).__log.submits.length === 1,
  );
  const log = await pageLog(page);
  expect(log.events).toHaveLength(1);
  const consentId = log.submits[0].consentId as string;
  expect(consentId).toBe(log.events[0].detail.consentId);
  return consentId;
}

describe('one trigger key, a banner per state', () => {
  it('shows the Maharashtra banner under data-region="IN-MH" and stores IN-MH in the proof', async () => {
    const id = await consentOn('IN-MH');
    expect(configUrls.at(-1)).toContain(`/api/v1/widget/config/${KEY}?lang=en&region=IN-MH`);
    const stored = await getStoredTransaction(world.p.rt, app.appId, id);
    expect(stored).toMatchObject({ processId: KEY, noticeId: notices['IN-MH'], noticeVersion: 1 });
    expect(stored?.proof?.region).toBe('IN-MH');
    // What the app's server reads back (public API, secret key).
    expect(await world.transaction(app, id)).toMatchObject({
      transactionId: id,
      noticeId: notices['IN-MH'],
      region: 'IN-MH',
    });
  });

  it('shows the Karnataka banner under data-region="IN-KA", though Maharashtra consented', async () => {
    const id = await consentOn('IN-KA');
    expect(configUrls.at(-1)).toContain('region=IN-KA');
    const stored = await getStoredTransaction(world.p.rt, app.appId, id);
    expect(stored).toMatchObject({ processId: KEY, noticeId: notices['IN-KA'] });
    expect(stored?.proof?.region).toBe('IN-KA');
    expect((await world.transaction(app, id)).region).toBe('IN-KA');

    // Each state's decision is kept under its own name, and each page lets its own through.
    const keys = await page.evaluate(() => Object.keys(localStorage).sort());
    expect(keys).toEqual([`svc_${app.siteKey}_${KEY}.IN-KA`, `svc_${app.siteKey}_${KEY}.IN-MH`]);
    expect(await isGated(page, '#signup')).toBe(false);
    await page.goto(world.pages.url('region-mh.html', app.siteKey));
    await widgetReady(page);
    expect(await isGated(page, '#signup')).toBe(false);
    expect(pageErrors).toEqual([]);
  });
});
