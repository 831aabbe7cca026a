import path from 'node:path';
import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  SCREENSHOTS,
  dialogOf,
  pageLog,
  poll,
  useBrowserPage,
  storedState,
  widgetReady,
} from './harness.js';

/** No script, a wrong origin, a strict Content-Security-Policy. */

const ui = useBrowserPage('security', ['newsletter_signup', 'marketing_prefs', 'quick_agree']);
const consoleErrors: string[] = [];

beforeAll(() => {
  ui.page.on('console', (m) => {
    if (m.type() === 'error') consoleErrors.push(m.text());
  });
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

describe('without the script (svc-trigger does nothing)', () => {
  it('svc-trigger has no effect', async () => {
    await ui.page.goto(ui.world.pages.url('noscript.html', ui.app.siteKey));
    await ui.page.click('#signup');
    await poll(async () => (await pageLog(ui.page)).submits).toEqual([
      { form: 'signup', consentId: null },
    ]);
    await ui.page.click('#pref');
    expect(await ui.page.locator('#pref').isChecked()).toBe(true);
    expect(await ui.page.locator('svc-consent-ui').count()).toBe(0);
    expect(await ui.page.evaluate(() => 'SvcConsent' in window)).toBe(false);
  });
});

describe('a page on an origin that is not on the allowlist', () => {
  it('capture is refused with 403; the widget says so and the page keeps working', async () => {
    await ui.page.goto(ui.world.pages.url('plain.html', ui.app.siteKey, { other: true }));
    await widgetReady(ui.page);
    expect(new URL(ui.page.url()).origin).toBe(ui.world.pages.otherOrigin);

    // The 403 carries no Access-Control-Allow-Origin, so the page only sees a failed fetch;
    // the status on the wire comes from Chromium's own network log (DevTools protocol).
    const wire = await wireStatuses(ui.page);
    await ui.page.click('#nf'); // silent: straight to the capture
    await poll(() => wire.get('POST /api/v1/widget/capture')).toEqual([403]);
    const alert = ui.page.locator('svc-consent-ui [role=alert]');
    await alert.waitFor();
    expect(await alert.textContent()).toContain('Your choice could not be saved');
    await ui.page.screenshot({ path: path.join(SCREENSHOTS, 'widget-error-wrong-origin.png') });
    // The action stayed held, nothing was recorded, and the rest of the page still works.
    const log = await pageLog(ui.page);
    expect(log.clicks).toEqual([]);
    expect(log.events).toEqual([]);
    expect(await ui.page.locator('#nf-parent input[name="svc-transaction-id"]').count()).toBe(0);
    expect(await storedState(ui.page, ui.app.siteKey, 'quick_agree')).toEqual({
      local: null,
      cookie: null,
    });
    await ui.page.click('#counter');
    await poll(() => ui.page.locator('#count').textContent()).toBe('1');

    // Granular: the notice cannot be loaded either; the dialog says so and closes on Esc.
    await ui.page.click('#signup');
    await poll(() => wire.get('GET /api/v1/widget/config/newsletter_signup')).toContain(403);
    await poll(() => dialogOf(ui.page).locator('h2').textContent()).toBe(
      'The consent notice could not be loaded. Please try again later.',
    );
    await ui.page.keyboard.press('Escape');
    await dialogOf(ui.page).waitFor({ state: 'detached' });
    expect((await pageLog(ui.page)).submits).toEqual([]);
    expect(ui.pageErrors).toEqual([]);
  });
});

describe('a page with a strict Content-Security-Policy', () => {
  it('the dialog is styled, capture works and the dashboard loads, with no violation', async () => {
    consoleErrors.length = 0;
    const res = await ui.page.goto(ui.world.pages.url('csp.html', ui.app.siteKey));
    const csp = res?.headers()['content-security-policy'] ?? '';
    expect(csp).toContain(`script-src 'self' ${ui.world.p.url}`);
    expect(csp).toContain(`style-src ${ui.world.p.url}`);
    expect(csp).toContain("require-trusted-types-for 'script'");
    await widgetReady(ui.page);

    await ui.page.click('#csp-submit');
    const accept = dialogOf(ui.page).getByRole('button', { name: 'Accept all' });
    await accept.waitFor();
    // Styled by the widget's constructed stylesheet, which the CSP allows.
    expect(await accept.evaluate((b) => getComputedStyle(b).backgroundColor)).toBe(
      'rgb(26, 79, 214)',
    );
    await ui.page.screenshot({ path: path.join(SCREENSHOTS, 'dialog-strict-csp.png') });
    await accept.click();
    await poll(async () => (await pageLog(ui.page)).submits.length).toBe(1);
    const consentId = (await pageLog(ui.page)).submits[0];
    const tx = await ui.world.transaction(ui.app, consentId);

    // The dashboard script loads through the Trusted Types policy "svc-consent".
    await ui.page.evaluate((ref) => {
      const d = document.createElement('div');
      d.id = 'consent-detail-root';
      d.setAttribute('data-reference-id', ref);
      document.getElementById('slot')!.append(d);
    }, tx.referenceId);
    await ui.page.locator('svc-dashboard-ui').getByRole('button', { name: 'Revoke all' }).waitFor();

    expect((await pageLog(ui.page)).violations).toEqual([]);
    expect(consoleErrors.filter((m) => /Content Security Policy|Trusted Type/i.test(m))).toEqual(
      [],
    );
    expect(ui.pageErrors).toEqual([]);

    // The policy is really enforced (the check above can fail): an inline style is refused.
    await ui.page.evaluate(() => document.body.setAttribute('style', 'color: red'));
    await poll(async () => (await pageLog(ui.page)).violations).toEqual([
      expect.stringMatching(/^style-src-attr inline$/),
    ]);
  });
});
