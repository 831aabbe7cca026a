import { createRequire } from 'node:module';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  PURPOSES,
  SCREENSHOTS,
  dialogOf,
  focused,
  noticeBody,
  poll,
  resetPage,
  useBrowserPage,
  widgetReady,
  type Json,
} from './harness.js';

/**
 * Cookie banner mode (docs/api.md, Cookie banner): a `kind: cookie` notice named by the script
 * tag's data-cookie-notice, the banner on first visit, and page scripts held back until their
 * purpose is granted. Real Chromium against the real service.
 */

const ui = useBrowserPage('cookie-banner', []);
let url: string;

beforeAll(async () => {
  const body = noticeBody({ triggerKey: 'site_cookies' });
  await ui.world.admin('POST', `/apps/${ui.app.appId}/notices`, {
    ...body,
    kind: 'cookie',
    translations: {
      ...body.translations,
      ur: {
        title: 'کوکیز کے لیے آپ کی رضامندی',
        body: 'ہم کوکیز صرف انہی مقاصد کے لیے استعمال کرتے ہیں جو آپ چنتے ہیں۔',
        purposes: Object.fromEntries(
          PURPOSES.map((p) => [p.name, { label: p.name, description: p.name }]),
        ),
      },
    },
  });
  url = ui.world.pages.url('cookies.html', ui.app.siteKey);
});

type Change = {
  triggerKey: string;
  purposes: string[];
  consentId: string;
  source: string;
  readyState: string;
};
const ran = (page = ui.page): Promise<string[]> =>
  page.evaluate(() => (window as unknown as { __ran: string[] }).__ran);
const changes = (page = ui.page): Promise<Change[]> =>
  page.evaluate(() => (window as unknown as { __changes: Change[] }).__changes);
const banner = (page = ui.page) => page.locator('svc-cookie-banner section');
const act = (name: string, page = ui.page) => banner(page).locator(`button[data-act="${name}"]`);
/** The last decision's purposes, once `n` svc:consent:changed events have fired. */
const decision = async (n: number, page = ui.page) => {
  await poll(async () => (await changes(page)).length).toBe(n);
  return (await changes(page))[n - 1]!;
};
const states = async (consentId: string) => {
  const tx: Json = await ui.world.transaction(ui.app, consentId);
  expect(tx).toMatchObject({ processId: 'site_cookies', source: 'widget', status: 'active' });
  return Object.fromEntries(
    tx.records.map((r: { purpose: string; state: string }) => [r.purpose, r.state]),
  );
};
/** Reloads; the gated scripts that run do so once the module has started from local state. */
const reload = async (page = ui.page) => {
  await page.reload();
  await widgetReady(page);
  await page.waitForFunction(() => document.readyState === 'complete');
};
const inertLater = (page = ui.page) =>
  page.evaluate(
    () => document.querySelectorAll('script[type="text/plain"][src="/cookies-later.js"]').length,
  );

describe('first visit', () => {
  it('shows the banner and runs no gated script until consent; the keyboard reaches it', async () => {
    await resetPage(ui.page, url);
    await banner().waitFor();
    // A landmark named by the notice's title.
    const region = ui.page.getByRole('region', { name: 'We need your consent (site_cookies)' });
    expect(await region.count()).toBe(1);
    expect(await ran()).toEqual(['block']);
    expect(await ui.page.getAttribute('#ad', 'src')).toBeNull();
    expect(await changes()).toEqual([]);
    await ui.page.screenshot({ path: path.join(SCREENSHOTS, 'cookie-banner.png') });

    // Not a modal: the page stays usable, and Tab from the top reaches the banner first.
    await ui.page.keyboard.press('Tab');
    expect(await focused(ui.page)).toBe('reject');
    await ui.page.keyboard.press('Tab');
    expect(await focused(ui.page)).toBe('accept');
    await ui.page.keyboard.press('Tab');
    expect(await focused(ui.page)).toBe('choose');
    await ui.page.keyboard.press('Tab');
    expect(await focused(ui.page)).toBe('settings');
    await ui.page.keyboard.press('Shift+Tab');
    await ui.page.keyboard.press('Shift+Tab');
    expect(await focused(ui.page)).toBe('accept');
    // The focused button is visibly outlined (the shared focus ring).
    const outline = await act('accept').evaluate((b) => getComputedStyle(b).outlineStyle);
    expect(outline).toBe('solid');
    await ui.page.keyboard.press('Enter');

    const d = await decision(1);
    expect(d).toMatchObject({
      triggerKey: 'site_cookies',
      purposes: ['essential', 'marketing', 'analytics'],
      source: 'decision',
    });
    // In document order: the external analytics script before the inline one after it.
    await poll(ran).toEqual(['block', 'analytics-external', 'analytics-inline', 'marketing']);
    expect(await ui.page.getAttribute('#ad', 'src')).toBe('/cookies-marketing.js');
    expect(await banner().count()).toBe(0);
    // A consent like any other: stored with its records, as the app's server reads it.
    expect(await states(d.consentId)).toEqual({
      essential: 'granted',
      marketing: 'granted',
      analytics: 'granted',
    });
  });

  it('on the next load, runs them from the stored decision while the page still parses', async () => {
    // The script in the middle of the body waits until the module has started: the gated
    // scripts after it are added to a page the module already watches.
    await ui.page.route('**/cookies-block.js', async (route) => {
      await ui.page.waitForFunction(
        () => ((window as unknown as { __changes?: unknown[] }).__changes ?? []).length > 0,
      );
      await route.continue();
    });
    try {
      await reload();
    } finally {
      await ui.page.unroute('**/cookies-block.js');
    }
    const [first] = await changes();
    expect(first).toMatchObject({
      purposes: ['essential', 'marketing', 'analytics'],
      source: 'stored',
      readyState: 'loading',
    });
    await poll(async () => (await ran()).length).toBe(4);
    const order = await ran();
    expect(order.filter((r) => r.startsWith('analytics'))).toEqual([
      'analytics-external',
      'analytics-inline',
    ]);
    expect(order).toContain('marketing');
    expect(await ui.page.getAttribute('#ad', 'src')).toBe('/cookies-marketing.js');
    expect(await banner().count()).toBe(0);
    expect(await changes()).toHaveLength(1);
  });

  it('never runs a gated element that names no purpose', async () => {
    expect(await ran()).not.toContain('no-purpose');
    expect(
      await ui.page.evaluate(
        () => document.querySelectorAll('script[type="text/plain"][data-svc-purpose=""]').length,
      ),
    ).toBe(1);
  });
});

describe('decisions', () => {
  it('"Reject optional" keeps analytics inert, on this load and the next', async () => {
    await resetPage(ui.page, url);
    await act('reject').click();
    const d = await decision(1);
    expect(d.purposes).toEqual(['essential']);
    expect(await banner().count()).toBe(0);
    expect(await states(d.consentId)).toEqual({
      essential: 'granted',
      marketing: 'denied',
      analytics: 'denied',
    });
    expect(await ran()).toEqual(['block']);

    await reload();
    expect(await changes()).toMatchObject([{ purposes: ['essential'], source: 'stored' }]);
    expect(await banner().count()).toBe(0);
    expect(await ran()).toEqual(['block']);

    // Once the decision has expired, it is not live: the banner is back.
    await ui.page.evaluate((name) => {
      const s = JSON.parse(localStorage.getItem(name)!);
      localStorage.setItem(name, JSON.stringify({ ...s, expiresAt: '2000-01-01T00:00:00.000Z' }));
    }, `svc_${ui.app.siteKey}_site_cookies`);
    await reload();
    await banner().waitFor();
    expect(await changes()).toEqual([]);
    expect(await ran()).toEqual(['block']);
  });

  it('"Choose" opens the notice dialog: analytics only; revoked, it stays inert next load', async () => {
    await resetPage(ui.page, url);
    await act('choose').click();
    const dialog = dialogOf(ui.page);
    await dialog.getByRole('checkbox', { name: 'Improving the site' }).check();
    await dialog.getByRole('button', { name: 'Save my choices', exact: true }).click();
    const d = await decision(1);
    expect(d.purposes).toEqual(['essential', 'analytics']);
    await poll(ran).toEqual(['block', 'analytics-external', 'analytics-inline']);
    expect(await ui.page.getAttribute('#ad', 'src')).toBeNull();
    expect(await states(d.consentId)).toEqual({
      essential: 'granted',
      marketing: 'denied',
      analytics: 'granted',
    });

    await reload();
    await poll(async () => (await ran()).filter((r) => r.startsWith('analytics'))).toEqual([
      'analytics-external',
      'analytics-inline',
    ]);
    expect(await banner().count()).toBe(0);

    // svc-cookie-settings reopens the banner with focus on it; rejecting revokes analytics.
    await ui.page.click('#settings');
    await banner().waitFor();
    expect(await focused(ui.page)).toBe('reject');
    await ui.page.keyboard.press('Enter');
    const revoked = await decision(2);
    expect(revoked.purposes).toEqual(['essential']);
    expect(revoked.consentId).not.toBe(d.consentId);
    // The decision it replaces is withdrawn (with the principal token of its capture).
    await poll(async () => (await ui.world.transaction(ui.app, d.consentId)).status).toBe(
      'revoked',
    );
    expect(await states(revoked.consentId)).toEqual({
      essential: 'granted',
      marketing: 'denied',
      analytics: 'denied',
    });
    // What already ran stays run; an analytics script added now stays inert.
    await ui.page.click('#later');
    expect(await inertLater()).toBe(1);

    await reload();
    expect(await changes()).toMatchObject([{ purposes: ['essential'], source: 'stored' }]);
    expect(await ran()).toEqual(['block']);
    expect(await banner().count()).toBe(0);
  });

  it('SvcConsent.openCookieSettings() reopens the banner', async () => {
    expect(await banner().count()).toBe(0);
    await ui.page.evaluate(() =>
      (
        window as unknown as { SvcConsent: { openCookieSettings(): void } }
      ).SvcConsent.openCookieSettings(),
    );
    await banner().waitFor();
    expect(await focused(ui.page)).toBe('reject');
  });

  it('runs a gated script added after load once its purpose is granted', async () => {
    await resetPage(ui.page, url);
    await banner().waitFor();
    await ui.page.click('#later');
    expect(await inertLater()).toBe(1);
    await act('accept').click();
    await poll(async () => (await ran()).filter((r) => r === 'analytics-later').length).toBe(1);
    // Added once analytics is granted: it runs at once.
    await ui.page.click('#later');
    await poll(async () => (await ran()).filter((r) => r === 'analytics-later').length).toBe(2);
    expect(await inertLater()).toBe(0);
  });

  it('a decision withdrawn on the server runs nothing on the next load: the banner is back', async () => {
    await resetPage(ui.page, url);
    await act('accept').click();
    const d = await decision(1);
    await poll(async () => (await ran()).includes('analytics-inline')).toBe(true);
    // The app's server revokes the whole decision (public API, secret key).
    const tx: Json = await ui.world.transaction(ui.app, d.consentId);
    const r = await ui.world.call(
      'POST',
      `/api/public/consents/my-transactions/${d.consentId}/revoke`,
      { headers: { 'x-secret-key': ui.app.secretKey }, body: { referenceId: tx.referenceId } },
    );
    expect(r.status, JSON.stringify(r.body)).toBe(200);

    await reload();
    await banner().waitFor();
    expect(await changes()).toEqual([]);
    expect(await ran()).toEqual(['block']);
    expect(await ui.page.getAttribute('#ad', 'src')).toBeNull();
  });
});

describe('layout, language and policy', () => {
  const fresh = async (o: Parameters<typeof ui.world.browser.newContext>[0] = {}) => {
    const ctx = await ui.world.browser.newContext(o);
    const page = await ctx.newPage();
    const errors: Error[] = [];
    page.on('pageerror', (e) => errors.push(e));
    return { ctx, page, errors };
  };

  it('at 200 % zoom (640 × 360 CSS pixels) every button stays in view and works', async () => {
    const { ctx, page, errors } = await fresh({
      viewport: { width: 640, height: 360 },
      deviceScaleFactor: 2,
    });
    try {
      await page.goto(url);
      await banner(page).waitFor();
      for (const name of ['reject', 'accept', 'choose']) {
        const box = (await act(name, page).boundingBox())!;
        expect(box.x, name).toBeGreaterThanOrEqual(0);
        expect(box.y, name).toBeGreaterThanOrEqual(0);
        expect(box.x + box.width, name).toBeLessThanOrEqual(640);
        expect(box.y + box.height, name).toBeLessThanOrEqual(360);
      }
      await page.screenshot({ path: path.join(SCREENSHOTS, 'cookie-banner-zoom200.png') });
      await act('accept', page).click();
      await poll(() => ran(page)).toContain('analytics-inline');
      expect(errors).toEqual([]);
    } finally {
      await ctx.close();
    }
  });

  it('is right to left in Urdu', async () => {
    const { ctx, page } = await fresh();
    try {
      await page.goto(url);
      await page.evaluate((k) => localStorage.setItem(`svc_${k}.lang`, 'ur'), ui.app.siteKey);
      await page.reload();
      await banner(page).waitFor();
      expect(await banner(page).getAttribute('dir')).toBe('rtl');
      expect(await banner(page).getAttribute('lang')).toBe('ur');
      expect(await banner(page).getAttribute('aria-label')).toBe('کوکیز کے لیے آپ کی رضامندی');
      // Start to the right: the first button (Reject) is right of the second (Accept).
      const reject = (await act('reject', page).boundingBox())!;
      const accept = (await act('accept', page).boundingBox())!;
      expect(reject.x).toBeGreaterThan(accept.x);
      await page.screenshot({ path: path.join(SCREENSHOTS, 'cookie-banner-ur.png') });
    } finally {
      await ctx.close();
    }
  });

  it('has no accessibility violations (axe-core)', async () => {
    const { ctx, page } = await fresh();
    try {
      await page.goto(url);
      await banner(page).waitFor();
      const axe = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
      await page.addScriptTag({ path: axe });
      const found = await page.evaluate(async () => {
        const r = await (
          window as unknown as {
            axe: { run(c: unknown): Promise<{ violations: { id: string }[] }> };
          }
        ).axe.run({ include: [['svc-cookie-banner']] });
        return r.violations.map((v) => v.id);
      });
      expect(found).toEqual([]);
    } finally {
      await ctx.close();
    }
  });

  it('works under a strict CSP with Trusted Types', async () => {
    const { ctx, page, errors } = await fresh();
    try {
      await page.goto(ui.world.pages.url('cookies-csp.html', ui.app.siteKey));
      await banner(page).waitFor();
      expect(await ran(page)).toEqual([]);
      await act('accept', page).click();
      await poll(() => ran(page)).toEqual(['analytics-external']);
      expect(
        await page.evaluate(() => (window as unknown as { __violations: [] }).__violations),
      ).toEqual([]);
      expect(errors).toEqual([]);
    } finally {
      await ctx.close();
    }
  });

  it('costs a page without data-cookie-notice nothing: no banner script is fetched', async () => {
    const { ctx, page } = await fresh();
    try {
      const scripts: string[] = [];
      page.on('request', (r) => {
        if (r.resourceType() === 'script') scripts.push(new URL(r.url()).pathname);
      });
      await page.goto(ui.world.pages.url('plain.html', ui.app.siteKey));
      await widgetReady(page);
      await page.waitForLoadState('load');
      expect(scripts).toEqual(['/svc-consent.v1.js', '/plain.js']);
      expect(await page.locator('svc-cookie-banner').count()).toBe(0);
    } finally {
      await ctx.close();
    }
  });
});
