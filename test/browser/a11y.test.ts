import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { consoleService } from '../../services/console/index.js';
import { portalService } from '../../services/portal/index.js';
import { CATALOGUES } from '../../shared/i18n/index.js';
import { getApp } from '../../shared/domain/apps.js';
import { listDispatchesByApp } from '../../shared/ledger/queries.js';
import { issuePrincipalToken } from '../../shared/principal/index.js';
import { dispatcherWorker } from '../../workers/dispatcher/index.js';
import { expectAccessible } from './axe.js';
import {
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
 * Accessibility measured with axe-core (WCAG 2.1 A and AA; serious and critical violations
 * fail, test/browser/axe.ts) in real Chromium against the real stack: the consent dialog in
 * English and in Urdu (right to left), the dialog at 200 % zoom, the dashboard and the hosted
 * portal in both languages, and every view the console renders. One world, one sandbox app with data (notices,
 * an API key, a consent and its webhook dispatch delivered to the app's sandbox inbox), one
 * browser. Keyboard-only use of the dialog is covered by widget.test.ts.
 */

const here = path.dirname(fileURLToPath(import.meta.url));
const ur = CATALOGUES.ur;
let world: World;
let app: BrowserApp;
let context: BrowserContext;
let page: Page;
let referenceId = '';
const pageErrors: Error[] = [];

beforeAll(async () => {
  world = await startWorld('a11y', [portalService, consoleService], [dispatcherWorker]);
  app = await world.createApp([{ triggerKey: 'newsletter_signup' }]);
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
  // Webhooks go to the app's own sandbox inbox, so the console has deliveries to show.
  await world.admin('PATCH', `/apps/${app.appId}`, {
    webhookUrl: `${world.p.url}/sandbox/inbox/${app.appId}`,
  });
  await world.admin('POST', `/apps/${app.appId}/api-keys`, {
    name: 'server',
    scopes: ['consents:read', 'consents:write'],
  });
  context = await world.browser.newContext({ viewport: { width: 1280, height: 900 } });
  page = await context.newPage();
  page.on('pageerror', (e) => pageErrors.push(e));
});
afterAll(async () => {
  await context?.close();
  await world?.close();
});

describe('the axe helper', () => {
  it('fails on known violations, in the document and inside an open shadow root', async () => {
    await page.setContent(`<!doctype html><html lang="en"><head><title>Broken</title></head>
<body><main><h1>Broken</h1><img src="data:image/gif;base64,R0lGODlhAQABAAAAACw="><button></button>
<div id="host"></div></main></body></html>`);
    await page.evaluate(() => {
      const root = document.getElementById('host')!.attachShadow({ mode: 'open' });
      root.innerHTML = '<div><input type="checkbox"></div>';
    });
    const failure = await expectAccessible(page, { label: 'broken page' }).then(
      () => '',
      (e: Error) => e.message,
    );
    expect(failure).toMatch(/image-alt \(critical\) at \["img"\]/);
    expect(failure).toMatch(/button-name \(critical\)/);
    // The widget's host element (its open shadow root audited with it), or a chain of
    // selectors into the shadow root: the unlabelled checkbox there, not the page's image.
    for (const include of ['#host', ['#host', 'div']]) {
      const inShadow = await expectAccessible(page, { include, label: 'shadow part' }).then(
        () => '',
        (e: Error) => e.message,
      );
      expect(inShadow).toMatch(/label \(critical\) at \[\["#host","input"\]\]/);
      expect(inShadow).not.toMatch(/image-alt/);
    }
    // A selector that matches nothing is an error, never an empty pass.
    await expect(expectAccessible(page, { include: '#absent', label: 'absent' })).rejects.toThrow(
      /No elements found/,
    );
  });

  it('passes a page without violations', async () => {
    await page.setContent(`<!doctype html><html lang="en"><head><title>Fine</title></head>
<body><main><h1>Fine</h1><button type="button">Save</button></main></body></html>`);
    expect(await expectAccessible(page, { label: 'fine page' })).toEqual([]);
  });
});

const dialog = () => dialogOf(page);
const button = (name: string) => dialog().getByRole('button', { name, exact: true });

/** Opens the dialog of the page's #signup trigger and waits until its notice has loaded. */
async function openDialog(p: Page) {
  await p.click('#signup');
  await dialogOf(p).waitFor({ state: 'visible' });
  await poll(() => dialogOf(p).getAttribute('aria-busy')).toBeNull();
}

describe('the consent dialog', () => {
  it('has no serious or critical violation in English', async () => {
    await page.goto(world.pages.url('account.html', app.siteKey));
    await widgetReady(page);
    await openDialog(page);
    await expectAccessible(page, { include: 'svc-consent-ui', label: 'dialog (en)' });
    const captured = page.evaluate(
      () =>
        new Promise<Json>((resolve) =>
          document.addEventListener('svc:consent:captured', (e) =>
            resolve((e as CustomEvent).detail),
          ),
        ),
    );
    await button('Accept all').click();
    referenceId = (await captured).referenceId;
    expect(referenceId).toMatch(/^SVC-REF-[0-9A-Z]{8}$/);
  });

  it('has no serious or critical violation in Urdu, right to left', async () => {
    await page.goto(world.pages.url('lang-ur.html', app.siteKey));
    await widgetReady(page);
    await openDialog(page);
    expect(await dialog().getAttribute('dir')).toBe('rtl');
    await expectAccessible(page, { include: 'svc-consent-ui', label: 'dialog (ur)' });
    await page.keyboard.press('Escape');
    await dialog().waitFor({ state: 'detached' });
  });

  it('is usable at 200 % zoom: nothing clipped, both choices reachable and clickable', async () => {
    // 1280 × 800 device pixels at 200 %: a 640 × 400 CSS-pixel viewport at two pixels each.
    const zoomed = await world.browser.newContext({
      viewport: { width: 640, height: 400 },
      deviceScaleFactor: 2,
    });
    try {
      const z = await zoomed.newPage();
      z.on('pageerror', (e) => pageErrors.push(e));
      await z.goto(world.pages.url('account.html', app.siteKey));
      await widgetReady(z);
      await openDialog(z);
      const d = dialogOf(z);
      const fit = await d.evaluate((el) => {
        const r = el.getBoundingClientRect();
        const clipped = [...el.querySelectorAll('h2,p,label,button,li,a,select,legend')]
          .filter((e) => e.scrollWidth > e.clientWidth + 1 || e.scrollHeight > e.clientHeight + 1)
          .map((e) => `${e.tagName}:${(e.textContent ?? '').trim().slice(0, 30)}`);
        return {
          left: r.left,
          right: r.right,
          top: r.top,
          bottom: r.bottom,
          overflowX: el.scrollWidth - el.clientWidth,
          overflowY: getComputedStyle(el).overflowY,
          clipped,
        };
      });
      // The dialog lies within the viewport, has no sideways overflow and scrolls itself.
      expect(fit.left).toBeGreaterThanOrEqual(0);
      expect(fit.right).toBeLessThanOrEqual(640);
      expect(fit.top).toBeGreaterThanOrEqual(0);
      expect(fit.bottom).toBeLessThanOrEqual(400);
      expect(fit.overflowX).toBeLessThanOrEqual(0);
      expect(fit.overflowY).toBe('auto');
      expect(fit.clipped).toEqual([]);
      for (const name of ['Accept all', 'Reject optional']) {
        const b = d.getByRole('button', { name, exact: true });
        await b.scrollIntoViewIfNeeded();
        const box = (await b.boundingBox())!;
        expect(box.x, name).toBeGreaterThanOrEqual(0);
        expect(box.x + box.width, name).toBeLessThanOrEqual(640);
        expect(box.y, name).toBeGreaterThanOrEqual(0);
        expect(box.y + box.height, name).toBeLessThanOrEqual(400);
      }
      await expectAccessible(z, { include: 'svc-consent-ui', label: 'dialog at 200 %' });
      const captured = z.evaluate(
        () =>
          new Promise<Json>((resolve) =>
            document.addEventListener('svc:consent:captured', (e) =>
              resolve((e as CustomEvent).detail),
            ),
          ),
      );
      await d.getByRole('button', { name: 'Reject optional', exact: true }).click();
      expect((await captured).decision).toBe('reject');
      await d.waitFor({ state: 'detached' });
    } finally {
      await zoomed.close();
    }
  });
});

describe('the dashboard', () => {
  for (const lang of ['en', 'ur'] as const)
    it(`has no serious or critical violation with the principal's consents (${lang})`, async () => {
      const token = await world.mintToken(app, referenceId);
      const file = lang === 'en' ? 'account.html' : 'lang-ur.html';
      await page.goto(world.pages.url(file, app.siteKey, { ref: referenceId, token }));
      await widgetReady(page);
      const board = page.locator('svc-dashboard-ui section.w');
      await poll(() => board.locator('dd .bd').first().textContent()).toBe(
        lang === 'en' ? 'Active' : ur.dashboard.s_active,
      );
      // The grievance form and the receipt download are part of what is audited.
      await poll(() => board.locator('form').count()).toBeGreaterThan(0);
      await expectAccessible(page, { include: 'svc-dashboard-ui', label: `dashboard (${lang})` });
    });
});

describe('the hosted portal', () => {
  for (const lang of ['en', 'ur'] as const)
    it(`has no serious or critical violation with the principal’s consents (${lang})`, async () => {
      const a = (await getApp(world.p.rt, app.appId))!;
      const { token } = issuePrincipalToken(world.p.rt.config, a, referenceId, {
        kind: 'portal',
        ttlMs: 600_000,
      });
      await page.goto(`${world.p.url}/portal/${referenceId}?lang=${lang}#token=${token}`);
      await page.locator('button.receipt').first().waitFor();
      expect(await page.locator('html').getAttribute('dir')).toBe(lang === 'en' ? 'ltr' : 'rtl');
      expect(await page.locator('td.state').count()).toBeGreaterThan(0);
      await expectAccessible(page, { label: `portal (${lang})` });
    });
});

/**
 * The console's views: every page renderer a route sends (sendPage(res, status, xPage(…))), read
 * from services/console, so a new view fails the coverage check below until it is audited here.
 */
function consoleViews(): string[] {
  const dir = path.resolve(here, '../../services/console');
  const names = new Set<string>();
  for (const f of fs.readdirSync(dir).filter((n) => n.endsWith('.ts')))
    for (const m of fs
      .readFileSync(path.join(dir, f), 'utf8')
      .matchAll(/sendPage\(\s*res,\s*[^,]+,\s*(\w+)\(/g))
      names.add(m[1]!);
  return [...names].sort();
}

describe('the console, every view', () => {
  const audited = new Set<string>();
  const consoleUrl = (p: string) => `${world.p.url}/console${p}`;
  const appUrl = (p = '') => consoleUrl(`/apps/${app.appId}${p}`);
  const audit = async (view: string, heading: string | RegExp) => {
    await page.getByRole('heading', { level: 1, name: heading }).waitFor();
    await expectAccessible(page, { label: `console ${view}` });
    audited.add(view);
  };

  it('the sign-in page, signed out', async () => {
    await page.goto(consoleUrl('/'));
    await audit('signInPage', 'Sign in');
    await page.getByLabel('Admin token or API key').fill(world.p.rt.config.SVC_ADMIN_TOKEN!);
    await page.keyboard.press('Enter');
  });

  it('the app list', async () => {
    await audit('appListPage', 'Apps');
  });

  it('an app’s page, with notices, a key and a dispatch', async () => {
    // The consent given above reached the app's inbox as a webhook.
    await vi.waitFor(
      async () => {
        const { items } = await listDispatchesByApp(world.p.rt, app.appId, { limit: 5 });
        expect(items.some((d) => d.deliveryStatus === 'delivered')).toBe(true);
      },
      { timeout: 30_000, interval: 200 },
    );
    await page.goto(appUrl());
    expect(await page.locator('#dispatches tbody tr').count()).toBeGreaterThan(0);
    expect(await page.locator('#api-keys tbody tr').count()).toBe(1);
    await audit('appPage', /Browser a11y/);
  });

  it('a dispatch with its ledger chain', async () => {
    await page.locator('#dispatches tbody a').first().click();
    await audit('dispatchPage', /^Dispatch/);
  });

  it('a new API key, shown once', async () => {
    await page.goto(appUrl());
    await page.getByLabel('Name', { exact: true }).fill('reader');
    await page.getByRole('checkbox', { name: 'consents:read' }).check();
    await page.getByRole('button', { name: 'Create key' }).click();
    await audit('shownOncePage', 'New API key');
  });

  it('the sandbox tools, with deliveries in the inbox', async () => {
    await page.goto(appUrl('/sandbox'));
    await page.getByRole('button', { name: 'Send signed' }).click();
    await page.locator('#done').waitFor();
    expect(await page.locator('#inbox-list li.delivery').count()).toBeGreaterThan(1);
    await audit('sandboxPage', /Sandbox tools/);
  });

  it('a refused go-live, naming what is missing', async () => {
    await page.goto(appUrl());
    await page.getByLabel('Live webhook URL (https)').fill('https://shop.example/hooks');
    await page.getByRole('button', { name: 'Go live' }).click();
    await audit('goLiveRefusedPage', 'Not ready to go live');
  });

  it('an error page', async () => {
    const res = await page.goto(consoleUrl('/apps/app_00000000000000000000'));
    expect(res?.status()).toBe(404);
    await audit('errorPage', /./);
  });

  it('covers every view the console renders', () => {
    const views = consoleViews();
    expect(views.length).toBeGreaterThan(5);
    expect([...audited].sort()).toEqual(views);
  });
});

it('no page saw an error', () => {
  expect(pageErrors).toEqual([]);
});
