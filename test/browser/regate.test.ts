import { randomBytes } from 'node:crypto';
import type { BrowserContext, Page, Route } from 'playwright-core';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  dialogOf,
  isGated,
  pageLog,
  poll,
  storedState,
  useBrowserPage,
  widgetReady,
} from './harness.js';

/**
 * A decision withdrawn on the server gates its trigger again (docs/widget-status.md): at the
 * next page load, and on a page left open within the 5-minute interval, driven by Playwright's
 * clock. Real Chromium, real service.
 */

const ui = useBrowserPage('regate', ['newsletter_signup']);
let url: string;
let apiKey: string;
const opened: BrowserContext[] = [];

beforeAll(async () => {
  url = ui.world.pages.url('plain.html', ui.app.siteKey);
  const key = await ui.world.admin('POST', `/apps/${ui.app.appId}/api-keys`, {
    name: 'server',
    scopes: ['consents:read', 'consents:write'],
  });
  apiKey = key.key as string;
});
afterEach(async () => {
  for (const c of opened.splice(0)) await c.close();
  expect(ui.pageErrors).toEqual([]);
});

/** A page of its own (fresh storage), its clock under the test's control from the start. */
async function freshPage() {
  const ctx = await ui.world.browser.newContext();
  opened.push(ctx);
  const page = await ctx.newPage();
  page.on('pageerror', (e) => ui.pageErrors.push(e));
  const checks: { status: number; body: string }[] = [];
  page.on('response', (r) => {
    if (r.url().includes('/api/v1/widget/status/'))
      void r.text().then(
        (body) => checks.push({ status: r.status(), body }),
        () => checks.push({ status: r.status(), body: '' }),
      );
  });
  await page.clock.install();
  await page.goto(url);
  await widgetReady(page);
  return { page, checks };
}

/** Accept all on #signup: the decision the widget stores. */
async function consent(page: Page): Promise<{ consentId: string; st: string }> {
  await page.click('#signup');
  await dialogOf(page).getByRole('button', { name: 'Accept all' }).click();
  await dialogOf(page).waitFor({ state: 'detached' });
  await poll(() => isGated(page, '#signup')).toBe(false);
  const s = JSON.parse((await storedState(page, ui.app.siteKey, 'newsletter_signup')).local!);
  expect(s.st).toMatch(/^svc_st_/);
  return s;
}

/** The app's server withdraws marketing through the record API, linking the capture to a user. */
async function withdraw(consentId: string) {
  const r = await ui.world.call('POST', '/api/v1/consents', {
    headers: { authorization: `Bearer ${apiKey}` },
    body: {
      userId: `user-${randomBytes(6).toString('hex')}`,
      email: 'shopper@example.com',
      consents: { marketing: false },
      consentId,
    },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  expect((await ui.world.transaction(ui.app, consentId)).status).toBe('partially_revoked');
}

async function reload(page: Page) {
  await page.reload();
  await widgetReady(page);
}

describe('a server-side withdrawal gates the trigger again', () => {
  it('a decision that still stands keeps its trigger open, without a dialog', async () => {
    const { page, checks } = await freshPage();
    const { consentId } = await consent(page);
    await reload(page);
    await poll(() => checks).toEqual([{ status: 200, body: '{"live":true}' }]);
    expect(await isGated(page, '#signup')).toBe(false);
    await page.click('#signup');
    await poll(async () => (await pageLog(page)).submits).toEqual([{ form: 'signup', consentId }]);
    expect(await dialogOf(page).count()).toBe(0);
    // Five minutes on: checked again, still open.
    await page.clock.runFor(300_000);
    await poll(() => checks.map((c) => c.body)).toEqual(['{"live":true}', '{"live":true}']);
    expect(await isGated(page, '#signup')).toBe(false);
  });

  it('at the next page load', async () => {
    const { page, checks } = await freshPage();
    const { consentId } = await consent(page);
    await withdraw(consentId);
    await reload(page);
    await poll(() => isGated(page, '#signup')).toBe(true);
    await poll(() => checks.at(-1)).toEqual({
      status: 200,
      body: '{"live":false,"reason":"withdrawn"}',
    });
    expect(await storedState(page, ui.app.siteKey, 'newsletter_signup')).toEqual({
      local: null,
      cookie: null,
    });
    // The next click shows the notice again; the page sees nothing of it.
    await page.click('#signup');
    await dialogOf(page).waitFor({ state: 'visible' });
    expect(await pageLog(page)).toMatchObject({ clicks: [], submits: [] });
  });

  it('on a page left open, within the 5-minute interval', async () => {
    const { page, checks } = await freshPage();
    const { consentId } = await consent(page);
    await withdraw(consentId);
    // Four minutes on: not asked yet, so the trigger is still open.
    await page.clock.runFor(240_000);
    expect(checks).toEqual([]);
    expect(await isGated(page, '#signup')).toBe(false);
    // Past the interval: asked, and gated again.
    await page.clock.runFor(61_000);
    await poll(() => isGated(page, '#signup')).toBe(true);
    await poll(() => checks).toEqual([
      { status: 200, body: '{"live":false,"reason":"withdrawn"}' },
    ]);
    await page.click('#signup');
    await dialogOf(page).waitFor({ state: 'visible' });
  });

  it('a click during the check waits for it; with no answer in 2 s the gate holds', async () => {
    const { page } = await freshPage();
    const { consentId } = await consent(page);
    // The status answers are held until the test lets them go.
    const held: Route[] = [];
    await page.route('**/api/v1/widget/status/**', (route) => {
      held.push(route);
    });
    await reload(page);
    await poll(() => held.length).toBe(1);
    // Still live, but unanswered: the click waits, then goes through once the answer comes.
    await page.click('#signup');
    expect(await pageLog(page)).toMatchObject({ clicks: [], submits: [] });
    await held.shift()!.continue();
    await poll(async () => (await pageLog(page)).submits).toEqual([{ form: 'signup', consentId }]);
    expect(await dialogOf(page).count()).toBe(0);

    // Withdrawn, unanswered: the click waits and then shows the notice.
    await withdraw(consentId);
    await reload(page);
    await poll(() => held.length).toBe(1);
    await page.click('#signup');
    await held.shift()!.continue();
    await dialogOf(page).waitFor({ state: 'visible' });
    expect(await pageLog(page)).toMatchObject({ clicks: [], submits: [] });
    await page.keyboard.press('Escape');
    await dialogOf(page).waitFor({ state: 'detached' });

    // A fresh decision, then no answer within 2 s: the gate holds (the notice is shown).
    const again = await consent(page);
    await reload(page);
    await poll(() => held.length).toBe(1);
    await page.click('#signup');
    await page.clock.runFor(2_001);
    await dialogOf(page).waitFor({ state: 'visible' });
    expect((await pageLog(page)).submits).toEqual([]);
    // The late answer (live) keeps the decision for the next click.
    await held.shift()!.continue();
    await page.keyboard.press('Escape');
    await dialogOf(page).waitFor({ state: 'detached' });
    await poll(async () => {
      const s = (await storedState(page, ui.app.siteKey, 'newsletter_signup')).local;
      return s && JSON.parse(s).consentId;
    }).toBe(again.consentId);
  });
});
