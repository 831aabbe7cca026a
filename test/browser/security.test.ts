import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  SCREENSHOTS,
  dialogOf,
  pageLog,
  poll,
  startWorld,
  storedState,
  widgetReady,
  type BrowserApp,
  type World,
} from './harness.js';

/** No script, a wrong origin, a strict Content-Security-Policy. */

let world: World;
let app: BrowserApp;
let page: Page;
const pageErrors: Error[] = [];
const consoleErrors: string[] = [];

beforeAll(async () => {
  world = await startWorld('security');
  app = await world.createApp(
    ['newsletter_signup', 'marketing_prefs', 'quick_agree'].map((triggerKey) => ({ triggerKey })),
  );
  page = await world.browser.newPage();
  page.on('pageerror', (e) => pageErrors.push(e));
  page.on('console', (m) => {
    if (m.type() === 'error') consoleErrors.push(m.text());
  });
});
afterAll(async () => {
  await world?.close();
});

/** Method + path -> HTTP status as received by the browser, CORS-blocked responses included. */
async function wireStatuses(p: Page) {
  const cdp = await p.context().newCDPSession(p);
  const names = new Map<string, string>();
  const statuses = new Map<string, number>();
  // The two events may arrive in either order: join them when asked.
  cdp.on('Network.requestWillBeSent', (e) => {
    names.set(e.requestId, `${e.request.method} ${new URL(e.request.url).pathname}`);
  });
  cdp.on('Network.responseReceivedExtraInfo', (e) => {
    statuses.set(e.requestId, e.statusCode);
  });
  await cdp.send('Network.enable');
  return {
    get(name: string): number[] {
      return [...statuses].filter(([id]) => names.get(id) === name).map(([, status]) => status);
    },
  };
}

describe('without the script (SPEC F rule 1)', () => {
  it('svc-trigger has no effect', async () => {
    await page.goto(world.pages.url('noscript.html', app.siteKey));
    await page.click('#signup');
    await poll(async () => (await pageLog(page)).submits).toEqual([
      { form: 'signup', consentId: null },
    ]);
    await page.click('#pref');
    expect(await page.locator('#pref').isChecked()).toBe(true);
    expect(await page.locator('svc-consent-ui').count()).toBe(0);
    expect(await page.evaluate(() => 'SvcConsent' in window)).toBe(false);
  });
});

describe('a page on an origin that is not on the allowlist', () => {
  it('capture is refused with 403; the widget says so and the page keeps working', async () => {
    await page.goto(world.pages.url('plain.html', app.siteKey, { other: true }));
    await widgetReady(page);
    expect(new URL(page.url()).origin).toBe(world.pages.otherOrigin);

    // The 403 carries no Access-Control-Allow-Origin, so the page only sees a failed fetch;
    // the status on the wire comes from Chromium's own network log (DevTools protocol).
    const wire = await wireStatuses(page);
    await page.click('#nf'); // silent: straight to the capture
    await poll(() => wire.get('POST /api/v1/widget/capture')).toEqual([403]);
    const alert = page.locator('svc-consent-ui [role=alert]');
    await alert.waitFor();
    expect(await alert.textContent()).toContain('Your choice could not be saved');
    await page.screenshot({ path: path.join(SCREENSHOTS, 'widget-error-wrong-origin.png') });
    // The action stayed held, nothing was recorded, and the rest of the page still works.
    const log = await pageLog(page);
    expect(log.clicks).toEqual([]);
    expect(log.events).toEqual([]);
    expect(await page.locator('#nf-parent input[name="svc-transaction-id"]').count()).toBe(0);
    expect(await storedState(page, app.siteKey, 'quick_agree')).toEqual({
      local: null,
      cookie: null,
    });
    await page.click('#counter');
    await poll(() => page.locator('#count').textContent()).toBe('1');

    // Granular: the notice cannot be loaded either; the dialog says so and closes on Esc.
    await page.click('#signup');
    await poll(() => wire.get('GET /api/v1/widget/config/newsletter_signup')).toContain(403);
    await poll(() => dialogOf(page).locator('h2').textContent()).toBe(
      'The consent notice could not be loaded. Please try again later.',
    );
    await page.keyboard.press('Escape');
    await dialogOf(page).waitFor({ state: 'detached' });
    expect((await pageLog(page)).submits).toEqual([]);
    expect(pageErrors).toEqual([]);
  });
});

describe('a page with a strict Content-Security-Policy', () => {
  it('the dialog is styled, capture works and the dashboard loads, with no violation', async () => {
    consoleErrors.length = 0;
    const res = await page.goto(world.pages.url('csp.html', app.siteKey));
    const csp = res?.headers()['content-security-policy'] ?? '';
    expect(csp).toContain(`script-src 'self' ${world.p.url}`);
    expect(csp).toContain(`style-src ${world.p.url}`);
    expect(csp).toContain("require-trusted-types-for 'script'");
    await widgetReady(page);

    await page.click('#csp-submit');
    const accept = dialogOf(page).getByRole('button', { name: 'Accept all' });
    await accept.waitFor();
    // Styled by the widget's constructed stylesheet, which the CSP allows.
    expect(await accept.evaluate((b) => getComputedStyle(b).backgroundColor)).toBe(
      'rgb(26, 79, 214)',
    );
    await page.screenshot({ path: path.join(SCREENSHOTS, 'dialog-strict-csp.png') });
    await accept.click();
    await poll(async () => (await pageLog(page)).submits.length).toBe(1);
    const consentId = (await pageLog(page)).submits[0];
    const tx = await world.transaction(app, consentId);

    // The dashboard script loads through the Trusted Types policy "svc-consent".
    await page.evaluate((ref) => {
      const d = document.createElement('div');
      d.id = 'consent-detail-root';
      d.setAttribute('data-reference-id', ref);
      document.getElementById('slot')!.append(d);
    }, tx.referenceId);
    await page.locator('svc-dashboard-ui').getByRole('button', { name: 'Revoke all' }).waitFor();

    expect((await pageLog(page)).violations).toEqual([]);
    expect(consoleErrors.filter((m) => /Content Security Policy|Trusted Type/i.test(m))).toEqual(
      [],
    );
    expect(pageErrors).toEqual([]);

    // The policy is really enforced (the check above can fail): an inline style is refused.
    await page.evaluate(() => document.body.setAttribute('style', 'color: red'));
    await poll(async () => (await pageLog(page)).violations).toEqual([
      expect.stringMatching(/^style-src-attr inline$/),
    ]);
  });
});
