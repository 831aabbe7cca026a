import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CATALOGUES } from '../../shared/i18n/index.js';
import {
  SCREENSHOTS,
  dialogOf,
  noticeBody,
  poll,
  startWorld,
  widgetReady,
  type BrowserApp,
  type Json,
  type World,
} from './harness.js';

/**
 * The widget and its dashboard in Urdu (right to left), in real Chromium against the real
 * service: the page says data-lang="ur"; the strings come from the service, not the script.
 */

const ur = CATALOGUES.ur;
let world: World;
let app: BrowserApp;
let page: Page;
const pageErrors: Error[] = [];
/** The paths of the UI-string requests the page made. */
const stringRequests: string[] = [];

beforeAll(async () => {
  world = await startWorld('languages');
  app = await world.createApp([]);
  const body = noticeBody({ triggerKey: 'urdu_signup' });
  await world.admin('POST', `/apps/${app.appId}/notices`, {
    ...body,
    translations: {
      en: body.translations.en,
      ur: {
        title: 'ہمیں آپ کی رضامندی درکار ہے',
        body: 'ہم آپ کا ڈیٹا صرف انہی مقاصد کے لیے استعمال کرتے ہیں جو آپ نیچے منتخب کریں۔',
        purposes: {
          essential: { label: 'آپ کا اکاؤنٹ چلانا', description: 'سروس کے لیے ضروری۔' },
          marketing: { label: 'ای میل پر پیشکشیں', description: 'خبریں اور پیشکشیں۔' },
          analytics: { label: 'سائٹ کی بہتری', description: 'سائٹ کا استعمال۔' },
        },
      },
    },
  });
  page = await world.browser.newPage();
  page.on('pageerror', (e) => pageErrors.push(e));
  page.on('request', (r) => {
    if (r.url().includes('/api/v1/widget/strings/')) stringRequests.push(new URL(r.url()).pathname);
  });
});
afterAll(async () => {
  await world?.close();
});

const dialog = () => dialogOf(page);
const box = (selector: string) =>
  dialog()
    .locator(selector)
    .first()
    .evaluate((el) => {
      const r = el.getBoundingClientRect();
      return { left: r.left, right: r.right };
    });
let referenceId = '';

describe('a page in Urdu', () => {
  it('opens the consent dialog in Urdu, laid out right to left', async () => {
    await page.goto(world.pages.url('lang-ur.html', app.siteKey));
    await widgetReady(page);
    await page.click('#signup');
    await dialog().waitFor({ state: 'visible' });
    await poll(() => dialog().getAttribute('aria-busy')).toBeNull();
    expect(await dialog().getAttribute('lang')).toBe('ur');
    expect(await dialog().getAttribute('dir')).toBe('rtl');
    expect(await dialog().evaluate((el) => getComputedStyle(el).direction)).toBe('rtl');
    const text = (await dialog().textContent()) ?? '';
    expect(text).toContain('ہمیں آپ کی رضامندی درکار ہے');
    expect(text).toContain(ur.widget.rightsTitle);
    expect(text).toContain(ur.widget.complain);
    expect(text).toContain(`(${ur.widget.required})`);
    for (const name of [ur.widget.acceptAll, ur.widget.rejectAll, ur.widget.save])
      expect(await dialog().getByRole('button', { name, exact: true }).count()).toBe(1);
    expect(await dialog().getByRole('button', { name: ur.widget.close }).count()).toBe(1);
    const picker = dialog().getByRole('combobox', { name: ur.widget.language });
    expect(
      await picker.locator('option').evaluateAll((os) => os.map((o) => o.textContent)),
    ).toEqual(['English', 'اردو']);
    // Mirrored: the title starts at the right, the close button sits at the left.
    const title = await box('h2');
    const close = await box('.x');
    expect(close.right).toBeLessThanOrEqual(title.left + 1);
    // The checkbox of a purpose is right of its label.
    expect((await box('.p input')).left).toBeGreaterThan((await box('.p label')).left);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'dialog-ur.png') });
    // The dashboard on the page (no reference yet) says so in Urdu, its strings fetched.
    await poll(() => page.locator('svc-dashboard-ui section.w').textContent()).toContain(
      ur.dashboard.noRef,
    );
    expect(stringRequests).toEqual(['/api/v1/widget/strings/ur']);

    const captured = page.evaluate(
      () =>
        new Promise<Json>((resolve) =>
          document.addEventListener('svc:consent:captured', (e) =>
            resolve((e as CustomEvent).detail),
          ),
        ),
    );
    await dialog().getByRole('button', { name: ur.widget.acceptAll, exact: true }).click();
    const detail = await captured;
    referenceId = detail.referenceId;
    expect((await world.transaction(app, detail.consentId)).language).toBe('ur');
  });

  it('says in Urdu that a notice could not be loaded', async () => {
    await page.click('#missing');
    await dialog().waitFor({ state: 'visible' });
    await poll(() => dialog().locator('h2').textContent()).toBe(ur.widget.loadFailed);
    expect(await dialog().getAttribute('dir')).toBe('rtl');
    await page.keyboard.press('Escape');
    await dialog().waitFor({ state: 'detached' });
  });

  it('shows the dashboard in Urdu, right to left', async () => {
    const token = await world.mintToken(app, referenceId);
    await page.goto(world.pages.url('lang-ur.html', app.siteKey, { ref: referenceId, token }));
    await widgetReady(page);
    const board = page.locator('svc-dashboard-ui section.w');
    await board.getByRole('heading', { name: ur.dashboard.title }).waitFor();
    expect(await board.getAttribute('lang')).toBe('ur');
    expect(await board.getAttribute('dir')).toBe('rtl');
    await poll(() => board.locator('dd .bd').first().textContent()).toBe(ur.dashboard.s_active);
    const text = (await board.textContent()) ?? '';
    expect(text).toContain(ur.dashboard.validUntil);
    expect(text).toContain(`${ur.dashboard.ref}: ${referenceId}`);
    // The grievance form and the receipt download speak Urdu too.
    await poll(() => board.textContent()).toContain(ur.dashboard.g_title);
    expect(text).toContain(ur.dashboard.receipt);
    expect(await board.getByRole('button', { name: ur.dashboard.g_file }).count()).toBe(1);
    // Table headers start at the right.
    const heads = await board
      .locator('thead th')
      .evaluateAll((ths) => ths.map((t) => t.getBoundingClientRect().left));
    expect(heads[0]).toBeGreaterThan(heads[heads.length - 1]!);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'dashboard-ur.png'), fullPage: true });
  });

  it('the page never saw an error', () => {
    expect(pageErrors).toEqual([]);
  });
});
