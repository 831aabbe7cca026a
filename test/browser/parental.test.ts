import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  SCREENSHOTS,
  dialogOf,
  noticeBody,
  pageLog,
  poll,
  startWorld,
  storedState,
  widgetReady,
  type BrowserApp,
  type World,
} from './harness.js';

/**
 * The widget under a notice that requires verifiable parental consent, in real Chromium against
 * the real service: the visitor's choice is saved, the banner says it awaits a parent's
 * verification, the page learns it from the captured event, and nothing is granted.
 */

let world: World;
let app: BrowserApp;
let page: Page;
const pageErrors: Error[] = [];

beforeAll(async () => {
  world = await startWorld('parental');
  app = await world.createApp([]);
  await world.admin('POST', `/apps/${app.appId}/notices`, {
    ...noticeBody({ triggerKey: 'newsletter_signup' }),
    requiresParentalConsent: true,
  });
  page = await world.browser.newPage();
  page.on('pageerror', (e) => pageErrors.push(e));
});
afterAll(async () => {
  await world?.close();
});

describe('widget: verifiable parental consent', () => {
  it('saves the choice, shows that it awaits a parent, and lets the action through ungranted', async () => {
    await page.goto(world.pages.url('plain.html', app.siteKey));
    await widgetReady(page);
    await page.click('#signup');
    const dialog = dialogOf(page);
    await dialog.waitFor({ state: 'visible' });
    await poll(() => dialog.getAttribute('aria-busy')).not.toBe('true');
    await dialog.getByRole('button', { name: 'Accept all', exact: true }).click();

    const banner = page.locator('svc-consent-ui .t');
    await banner.waitFor({ state: 'visible' });
    expect(await banner.getAttribute('role')).toBe('alert');
    expect(await banner.textContent()).toContain(
      'It takes effect once a parent or guardian has verified it.',
    );
    await page.screenshot({ path: path.join(SCREENSHOTS, 'widget-parental-pending.png') });

    await poll(() => pageLog(page).then((l) => l.events.length)).toBe(1);
    const { events } = await pageLog(page);
    expect(events[0].detail).toMatchObject({ parentalVerification: 'pending', decision: 'accept' });
    const consentId = events[0].detail.consentId as string;
    // The visitor's own click went on, with the consent id for the app to verify.
    await poll(() => pageLog(page).then((l) => l.submits.length)).toBe(1);
    expect((await pageLog(page)).submits[0]).toEqual({ form: 'signup', consentId });
    const stored = await storedState(page, app.siteKey, 'newsletter_signup');
    expect(JSON.parse(stored.local!).consentId).toBe(consentId);

    const txn = await world.transaction(app, consentId);
    expect(txn.status).toBe('pending');
    expect(txn.records.map((r: { state: string }) => r.state)).toEqual([
      'pending',
      'pending',
      'pending',
    ]);
    expect(pageErrors).toEqual([]);
  });
});
