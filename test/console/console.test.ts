import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { consoleService } from '../../services/console/index.js';
import { readSession } from '../../services/console/session.js';
import { dispatchAdminService } from '../../services/dispatch-admin/index.js';
import { ledgerService } from '../../services/ledger/index.js';
import { postbackService } from '../../services/postback/index.js';
import { getApp } from '../../shared/domain/apps.js';
import { getEndpointState } from '../../shared/storage/webhooks/endpoints.js';
import { dispatcherWorker } from '../../workers/dispatcher/index.js';
import {
  SCREENSHOTS,
  dialogOf,
  poll,
  startWorld,
  widgetReady,
  type BrowserApp,
  type Json,
  type World,
} from '../browser/harness.js';
import { shots } from './shots.js';

/**
 * The console (docs/api.md, Console) in real Chromium against the real stack: sign-in with the
 * admin token, the app list and page, the widget's verification appearing, a secret rotation
 * shown once and signing the next webhook, API keys created and revoked, CSRF, sign-out, and an
 * API-key session confined to its app. Screenshots at 1280 and 360 px go to
 * test-results/screenshots/.
 */

let world: World;
let shop: BrowserApp;
let other: BrowserApp;
let context: BrowserContext;
let page: Page;
/** What the browser reported: console errors (CSP violations among them) and page errors. */
const problems: string[] = [];
/** Webhooks the app's server received (a real receiver on loopback), raw for verification. */
const hooks: { headers: http.IncomingHttpHeaders; body: string; at: number }[] = [];
/** While set, the receiver answers 410 Gone (which makes the dispatcher disable it). */
let gone = false;
const receiver = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    if (gone) {
      res.statusCode = 410;
      return res.end();
    }
    hooks.push({
      headers: req.headers,
      body: Buffer.concat(chunks).toString('utf8'),
      at: Date.now(),
    });
    res.end('{"ok":true}');
  });
});

const consoleUrl = (p = '/') => `${world.p.url}/console${p}`;

function watch(p: Page) {
  p.on('console', (m) => {
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource'))
      problems.push(m.text());
  });
  p.on('pageerror', (e) => problems.push(e.message));
}

/** A silent widget capture from the allowlisted origin: a consent event, so a webhook. */
async function capture(app: BrowserApp): Promise<Json> {
  const r = await world.call('POST', '/api/v1/widget/capture', {
    headers: { 'x-site-key': app.siteKey, origin: world.pages.origin },
    body: {
      siteKey: app.siteKey,
      processId: 'newsletter_signup',
      mode: 'silent',
      language: 'en',
      pageUrl: `${world.pages.origin}/plain.html`,
    },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body;
}

beforeAll(async () => {
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  world = await startWorld(
    'console',
    [consoleService, dispatchAdminService, postbackService, ledgerService],
    [dispatcherWorker],
  );
  shop = await world.createApp([{ triggerKey: 'newsletter_signup' }], {
    name: 'Shop & Co',
    webhookUrl: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`,
  });
  other = await world.createApp([{ triggerKey: 'newsletter_signup' }], { name: 'Other Ltd' });
  context = await world.browser.newContext({ viewport: { width: 1280, height: 900 } });
  page = await context.newPage();
  watch(page);
});
afterAll(async () => {
  await context?.close();
  await world?.close();
  receiver.closeAllConnections();
  receiver.close();
});

describe('the console in Chromium', () => {
  it('signs in with the admin token and lists the apps; an app’s page shows its site key', async () => {
    await page.goto(consoleUrl('/'));
    expect(new URL(page.url()).pathname).toBe('/console/sign-in');
    await page.getByLabel('Admin token or API key').fill(world.p.rt.config.SVC_ADMIN_TOKEN!);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Apps', level: 1 }).waitFor();
    const cookie = (await context.cookies()).find((c) => c.name === '__Host-svc_console');
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/', secure: true });
    // The cookie is out of the script's reach.
    expect(await page.evaluate(() => document.cookie)).toBe('');
    await expect.poll(() => page.getByRole('link', { name: 'Shop & Co' }).count()).toBe(1);
    expect(await page.getByRole('link', { name: 'Other Ltd' }).count()).toBe(1);
    await shots(page, 'apps');

    // Keyboard: the first Tab reaches the skip link, drawn with a visible focus ring.
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Skip to content');
    expect(
      await page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle),
    ).not.toBe('none');

    await page.getByRole('link', { name: 'Shop & Co' }).click();
    await page.getByRole('heading', { name: /Shop & Co/, level: 1 }).waitFor();
    expect(await page.locator('#site-key').textContent()).toBe(shop.siteKey);
    // console.js reveals the copy buttons; one copies the site key.
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], {
      origin: world.p.url,
    });
    await page.getByRole('button', { name: 'Copy the site key' }).click();
    await poll(() => page.evaluate(() => navigator.clipboard.readText())).toBe(shop.siteKey);
    await poll(() => page.locator('#live').textContent()).toBe('Copied to the clipboard.');
    expect(await page.locator('#secret-masked').textContent()).toBe(
      `svc_sk_test_…${shop.secretKey.slice(-4)}`,
    );
    expect(await page.content()).not.toContain(shop.secretKey);
    expect(await page.locator('#snippet-script').textContent()).toContain(
      `data-site-key="${shop.siteKey}"`,
    );
    expect(await page.locator('#notices').textContent()).toContain('newsletter_signup');
  });

  it('shows when and where the widget was verified, once a page from an allowed origin loaded it', async () => {
    expect(await page.locator('#widget-verified').textContent()).toContain('Not verified yet');
    const site = await context.newPage();
    watch(site);
    await site.goto(world.pages.url('plain.html', shop.siteKey));
    await widgetReady(site);
    // The click makes the widget fetch its configuration (and open its dialog).
    await site.click('#signup');
    await dialogOf(site).waitFor();
    await vi.waitFor(
      async () => expect((await getApp(world.p.rt, shop.appId))?.widgetVerifiedAt).toBeTruthy(),
      {
        timeout: 10_000,
        interval: 100,
      },
    );
    await site.close();
    await page.reload();
    const text = (await page.locator('#widget-verified').textContent()) ?? '';
    expect(text).toMatch(/^Last verified \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC from /);
    expect(text).toContain(world.pages.origin);
  });

  it('rotates the secret key, shows it once, and the next webhook verifies with it', async () => {
    const old = shop.secretKey;
    page.once('dialog', (d) => void d.accept());
    await page.getByRole('button', { name: 'Rotate the secret key' }).click();
    await page.getByRole('heading', { name: 'New secret key' }).waitFor();
    const secret = ((await page.locator('#shown-once').textContent()) ?? '').trim();
    expect(secret).toMatch(/^svc_sk_test_[0-9A-Za-z]{40}$/);
    expect(secret).not.toBe(old);
    await page.screenshot({
      path: path.join(SCREENSHOTS, 'console-secret-shown-once.png'),
      fullPage: true,
    });

    // Shown once: the app's page shows it masked only.
    await page.goto(consoleUrl(`/apps/${shop.appId}`));
    expect(await page.locator('#secret-masked').textContent()).toBe(
      `svc_sk_test_…${secret.slice(-4)}`,
    );
    expect(await page.content()).not.toContain(secret);

    // The old secret is refused by the postback API; the new one authenticates.
    const postback = (key: string) =>
      world.call('POST', '/api/v1/server/consent/action', {
        headers: { 'x-secret-key': key },
        body: {},
      });
    expect((await postback(old)).status).toBe(401);
    expect((await postback(secret)).status).toBe(422);

    // A webhook sent after the rotation is signed with the new secret (and not the old one).
    const rotatedAt = Date.now();
    const captured = await capture(shop);
    const hook = await vi.waitFor(
      () => {
        const h = hooks.find((x) => x.at >= rotatedAt && x.body.includes(captured.consentId));
        expect(h).toBeDefined();
        return h!;
      },
      { timeout: 20_000, interval: 100 },
    );
    const headers = hook.headers as Record<string, string>;
    const event = new Webhook(Buffer.from(secret), { format: 'raw' }).verify(
      hook.body,
      headers,
    ) as Json;
    expect(event.data.consentId).toBe(captured.consentId);
    expect(() =>
      new Webhook(Buffer.from(old), { format: 'raw' }).verify(hook.body, headers),
    ).toThrow();
    shop.secretKey = secret;
  });

  it('lists the recent dispatches, each linking to its ledger entry', async () => {
    await page.goto(consoleUrl(`/apps/${shop.appId}`));
    await poll(async () => {
      await page.reload();
      return page.locator('#dispatches tbody tr').count();
    }).toBeGreaterThan(0);
    expect(await page.locator('#endpoint-health').textContent()).toMatch(
      /\d+ of \d+ recent dispatches delivered/,
    );
    await shots(page, 'app');
    await page.locator('#dispatches tbody tr a').first().click();
    await page.getByRole('heading', { name: /^Dispatch dsp_/ }).waitFor();
    expect(await page.locator('#chain').textContent()).toMatch(/^Intact: \d+ entries/);
    expect(await page.locator('#attempts tbody tr').count()).toBeGreaterThan(0);
    await page.screenshot({
      path: path.join(SCREENSHOTS, 'console-dispatch-1280.png'),
      fullPage: true,
    });
  });

  it('shows a disabled endpoint and re-enables it: the newest dispatch is resent and succeeds', async () => {
    // The receiver answers 410 Gone: the dispatcher disables the endpoint itself.
    gone = true;
    await capture(shop);
    await vi.waitFor(
      async () => expect((await getEndpointState(world.p.rt, shop.appId))?.disabledAt).toBeTruthy(),
      { timeout: 20_000, interval: 100 },
    );
    gone = false;
    await page.goto(consoleUrl(`/apps/${shop.appId}`));
    const health = page.locator('#endpoint-health');
    expect(await health.textContent()).toContain('Disabled');
    expect(await health.textContent()).toContain('it answered 410 Gone');
    expect(await health.textContent()).toMatch(/Last error.*HTTP 410/s);
    await page.screenshot({
      path: path.join(SCREENSHOTS, 'console-disabled-1280.png'),
      fullPage: true,
    });

    const before = hooks.length;
    await page.getByRole('button', { name: 'Re-enable: resend the newest dispatch' }).click();
    await page.getByText('The newest dispatch is queued again').waitFor();
    // A resend goes out to the disabled endpoint; its success enables the endpoint again.
    await vi.waitFor(() => expect(hooks.length).toBeGreaterThan(before), {
      timeout: 20_000,
      interval: 100,
    });
    expect(hooks.at(-1)!.headers['x-svc-attempt']).toBe('2');
    await poll(async () => {
      await page.reload();
      return health.textContent();
    }).toContain('Enabled');
    expect(await page.getByRole('button', { name: /^Re-enable/ }).count()).toBe(0);
  });

  it('creates an API key (shown once, it works) and revokes it (it stops working)', async () => {
    await page.goto(consoleUrl(`/apps/${shop.appId}`));
    await page.getByLabel('Name').fill('auditor');
    await page.getByLabel('ledger:read').check();
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByRole('heading', { name: 'New API key' }).waitFor();
    const key = ((await page.locator('#shown-once').textContent()) ?? '').trim();
    expect(key).toMatch(/^svc_ak_[0-9A-Za-z]{40}$/);
    const ledger = () =>
      world.call('GET', '/api/v1/ledger/dispatches', {
        headers: { authorization: `Bearer ${key}` },
      });
    expect((await ledger()).status).toBe(200);

    await page.getByRole('link', { name: 'Back to Shop & Co' }).click();
    const row = page.locator('#api-keys tr', {
      has: page.getByRole('rowheader', { name: 'auditor' }),
    });
    expect(await row.textContent()).toContain('active');
    expect(await page.content()).not.toContain(key);
    page.once('dialog', (d) => void d.accept());
    await page.getByRole('button', { name: 'Revoke auditor' }).click();
    await page.getByText('The API key is revoked.').waitFor();
    expect(await row.textContent()).toContain('revoked');
    expect((await ledger()).status).toBe(401);
  });

  it('refuses a change without the CSRF token: 403, and nothing changes', async () => {
    const before = (await getApp(world.p.rt, shop.appId))!.secretVersion;
    const answer = await page.evaluate(async (url) => {
      const r = await fetch(url, { method: 'POST' });
      return { status: r.status, type: r.headers.get('content-type'), body: await r.text() };
    }, `/console/apps/${shop.appId}/secret/rotate`);
    expect(answer.status).toBe(403);
    expect(answer.type).toMatch(/^application\/problem\+json/);
    expect(JSON.parse(answer.body).code).toBe('SVC_FORBIDDEN');
    expect((await getApp(world.p.rt, shop.appId))!.secretVersion).toBe(before);
  });

  it('an API-key session (console scope) shows its own app only', async () => {
    const created = await world.admin('POST', `/apps/${shop.appId}/api-keys`, {
      name: 'owner',
      scopes: ['console'],
    });
    const ctx = await world.browser.newContext();
    try {
      const p2 = await ctx.newPage();
      watch(p2);
      await p2.goto(consoleUrl('/sign-in'));
      await p2.getByLabel('Admin token or API key').fill(created.key);
      await p2.getByRole('button', { name: 'Sign in' }).click();
      await p2.getByRole('heading', { name: /Shop & Co/, level: 1 }).waitFor();
      expect(await p2.locator('.who').textContent()).toContain('owner');
      const res = await p2.goto(consoleUrl(`/apps/${other.appId}`));
      expect(res?.status()).toBe(404);
      expect(await p2.content()).not.toContain(other.siteKey);
      await p2.goto(consoleUrl('/'));
      expect(await p2.getByRole('link', { name: 'Other Ltd' }).count()).toBe(0);
      expect(await p2.getByRole('link', { name: 'Shop & Co' }).count()).toBe(1);
    } finally {
      await ctx.close();
    }
  });

  it('signs out: the session is deleted and its cookie no longer works', async () => {
    const id = (await context.cookies()).find((c) => c.name === '__Host-svc_console')!.value;
    await page.goto(consoleUrl('/'));
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect((await context.cookies()).find((c) => c.name === '__Host-svc_console')).toBeUndefined();
    expect(await readSession(world.p.rt, id)).toBeUndefined();
    const replay = await fetch(consoleUrl('/'), {
      headers: { cookie: `__Host-svc_console=${id}` },
      redirect: 'manual',
    });
    expect(replay.status).toBe(303);
    expect(replay.headers.get('location')).toBe('/console/sign-in');
    expect(problems).toEqual([]);
  });
});
