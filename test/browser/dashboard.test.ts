import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Webhook } from 'standardwebhooks';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { portalService } from '../../services/portal/index.js';
import { issuePrincipalToken } from '../../shared/principal/index.js';
import { verifyReceipt } from '../../shared/receipts/receipt.js';
import { keysFromJwks, signingKeys } from '../../shared/signing/keys.js';
import { dispatcherWorker } from '../../workers/dispatcher/index.js';
import { collectTopic } from '../helpers/kafka.js';
import {
  SCREENSHOTS,
  dialogOf,
  poll,
  focused,
  isGated as isGatedOn,
  startWorld,
  storedState,
  widgetReady,
  type BrowserApp,
  type Json,
  type World,
} from './harness.js';

/**
 * The dashboard (docs/widget.md, step 5): the `div` on the app's
 * page, mounted on demand by the widget script, managing the principal's consent through the public
 * API from the allowlisted origin with the principal token the app's server minted (`data-token`);
 * a revocation there reaches Kafka and makes the notice's trigger gate again.
 */

let world: World;
let app: BrowserApp;
let page: Page;
let events: Awaited<ReturnType<typeof collectTopic>>;
let consentId: string;
let referenceId: string;
/** Minted by the app's server for its signed-in user, put in data-token. */
let token: string;
/** The Authorization header of each listing the dashboard asked the public API for. */
const apiAuth: string[] = [];
const pageErrors: Error[] = [];
/** Webhooks the app's server received (a real receiver on loopback), raw for verification. */
const hooks: { headers: http.IncomingHttpHeaders; body: string }[] = [];
const receiver = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    hooks.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
    res.end('{"ok":true}');
  });
});
const scriptRequests: string[] = [];

beforeAll(async () => {
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  world = await startWorld('dashboard', [portalService], [dispatcherWorker]);
  events = await collectTopic(world.p.rt.kafka, world.p.rt.topics.consentEvents);
  app = await world.createApp([{ triggerKey: 'newsletter_signup' }], {
    webhookUrl: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`,
  });
  page = await world.browser.newPage({ viewport: { width: 1000, height: 900 } });
  page.on('pageerror', (e) => pageErrors.push(e));
  page.on('request', (r) => {
    if (r.url().endsWith('.v1.js')) scriptRequests.push(new URL(r.url()).pathname);
    // The dashboard's listing (the widget's own stored-consent check uses its capture's token).
    if (r.url().includes('/api/public/consents/my-transactions?') && r.method() === 'GET')
      apiAuth.push(r.headers().authorization ?? '');
  });
});
afterAll(async () => {
  await events?.stop();
  await world?.close();
  receiver.closeAllConnections();
  receiver.close();
});

const board = () => page.locator('svc-dashboard-ui section');
const row = (purpose: string) => board().locator('tr', { has: page.getByText(purpose) });
const recordStates = async () =>
  Object.fromEntries(
    (await world.transaction(app, consentId)).records.map((r: Json) => [r.purpose, r.state]),
  );
const eventsOf = (type: string) =>
  events.messages
    .map((m) => m.value as Json)
    .filter((v) => v?.type === type && v.data?.consentId === consentId);
const isGated = (selector: string) => isGatedOn(page, selector);

describe('embeddable dashboard', () => {
  it('a capture on the account page first (the principal gets a referenceId)', async () => {
    await page.goto(world.pages.url('account.html', app.siteKey));
    await widgetReady(page);
    // data-reference-id is still empty: the dashboard says so instead of calling the API.
    await poll(() => board().textContent()).toContain('No reference ID');
    await page.evaluate(() => {
      const w = window as unknown as { captured: Promise<unknown> };
      w.captured = new Promise((resolve) =>
        document.addEventListener('svc:consent:captured', (e) =>
          resolve((e as CustomEvent).detail),
        ),
      );
    });
    await page.click('#signup');
    await dialogOf(page).getByRole('button', { name: 'Accept all' }).click();
    const detail: Json = await page.evaluate(
      () => (window as unknown as { captured: Promise<unknown> }).captured,
    );
    consentId = detail.consentId;
    referenceId = detail.referenceId;
    expect(referenceId).toMatch(/^SVC-REF-[0-9A-Z]{8}$/);
    expect(await isGated('#signup')).toBe(false);
  });

  it('mounts from <div id="consent-detail-root" data-reference-id data-token> and lists the transactions', async () => {
    scriptRequests.length = 0;
    apiAuth.length = 0;
    token = await world.mintToken(app, referenceId);
    await page.goto(world.pages.url('account.html', app.siteKey, { ref: referenceId, token }));
    await widgetReady(page);
    await board().getByRole('heading', { name: 'Your consent history' }).waitFor();
    // The dashboard file is loaded on demand, once.
    expect(scriptRequests).toEqual(['/svc-consent.v1.js', '/svc-dashboard.v1.js']);
    await poll(() => board().textContent()).toContain('Offers by e-mail'); // notice labels
    // It called the public API with the token of data-token (not the one the capture left).
    expect(apiAuth.length).toBeGreaterThan(0);
    expect(new Set(apiAuth)).toEqual(new Set([`Bearer ${token}`]));
    const text = (await board().textContent()) ?? '';
    expect(text).toContain(referenceId);
    expect(text).toContain('Notice: newsletter_signup');
    expect(text).toContain('Active');
    expect(text).toContain('Given on');
    expect(text).toContain('Valid until');
    expect(await board().locator('table').count()).toBe(1);
    expect(await board().locator('tbody tr').count()).toBe(3);
    expect(await row('Offers by e-mail').locator('.bd').textContent()).toBe('Granted');
    // The page's CSS (svc-dashboard-ui { display: none !important }) does not hide it.
    expect(await board().isVisible()).toBe(true);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'dashboard.png'), fullPage: true });
  });

  it('downloads the signed receipt of a transaction through the public API', async () => {
    const button = board().getByRole('button', { name: 'Download receipt' });
    expect(await button.count()).toBe(1);
    const [download] = await Promise.all([page.waitForEvent('download'), button.click()]);
    expect(download.suggestedFilename()).toBe(`consent-receipt-${consentId}.json`);
    const receipt = JSON.parse(fs.readFileSync(await download.path(), 'utf8')) as Json;
    expect(receipt).toMatchObject({
      transactionId: consentId,
      referenceId,
      method: { via: 'widget' },
      notice: { processId: 'newsletter_signup' },
    });
    expect(verifyReceipt(receipt, keysFromJwks(signingKeys(world.p.rt.config).jwks)).ok).toBe(true);
    // The button is enabled again, and nothing was reported as failed.
    await poll(() => button.isDisabled()).toBe(false);
    expect(await board().locator('.msg').textContent()).toBe('');
    expect(pageErrors).toEqual([]);
  });

  it('in a fresh browser: nothing loads without a token (site key and origin are not enough); data-token alone works', async () => {
    const context = await world.browser.newContext();
    try {
      const fresh = await context.newPage();
      const refused: number[] = [];
      fresh.on('response', (r) => {
        if (r.url().includes('/api/public/consents/my-transactions')) refused.push(r.status());
      });
      const dash = fresh.locator('svc-dashboard-ui section');
      await fresh.goto(world.pages.url('account.html', app.siteKey, { ref: referenceId }));
      await poll(() => dash.getByRole('alert').textContent()).toBe(
        'Your consents could not be loaded.',
      );
      expect(refused).toEqual([401]);
      expect(await dash.locator('table').count()).toBe(0);

      await fresh.goto(world.pages.url('account.html', app.siteKey, { ref: referenceId, token }));
      await poll(() => dash.locator('tbody tr').count()).toBe(3);
      expect(refused).toEqual([401, 200]);
      // The token opens this one principal only: another's referenceId with it shows nothing.
      const other = await world.call('POST', '/api/v1/widget/capture', {
        headers: { 'x-site-key': app.siteKey, origin: world.pages.origin },
        body: {
          siteKey: app.siteKey,
          processId: 'newsletter_signup',
          mode: 'silent',
          language: 'en',
          pageUrl: `${world.pages.origin}/account.html`,
        },
      });
      await fresh.goto(
        world.pages.url('account.html', app.siteKey, { ref: other.body.referenceId, token }),
      );
      await poll(() => dash.getByRole('alert').textContent()).toBe(
        'Your consents could not be loaded.',
      );
      expect(refused).toEqual([401, 200, 403]);
    } finally {
      await context.close();
    }
  });

  it('revokes one record: re-rendered, stored, consent.withdrawn on Kafka, the trigger gates again', async () => {
    await board().getByRole('button', { name: 'Revoke: Offers by e-mail' }).click();
    await poll(() => row('Offers by e-mail').locator('.bd').textContent()).toBe('Revoked');
    expect(await board().getByRole('status').textContent()).toBe('Consent revoked.');
    expect(await board().locator('dd .bd').first().textContent()).toBe('Partly revoked');
    // Focus stays in the row: the control that replaced "Revoke".
    expect(await focused(page)).toBe('Grant: Offers by e-mail');

    expect(await recordStates()).toEqual({
      essential: 'granted',
      marketing: 'revoked',
      analytics: 'granted',
    });
    const tx = await world.transaction(app, consentId);
    const marketing = tx.records.find((r: Json) => r.purpose === 'marketing').recordId;
    const withdrawn = await vi.waitFor(
      () => {
        const e = eventsOf('consent.withdrawn');
        expect(e).toHaveLength(1);
        return e[0];
      },
      { timeout: 15_000, interval: 50 },
    );
    expect(withdrawn.data).toMatchObject({
      referenceId,
      recordIds: [marketing],
      purposes: { marketing: false },
    });
    expect(withdrawn.data.postback.required).toBe(true);
    // …and the app's server receives it as a signed webhook that needs a postback.
    const hook = await vi.waitFor(
      () => {
        const h = hooks.find((x) => x.headers['x-svc-event'] === 'consent.withdrawn');
        expect(h).toBeDefined();
        return h!;
      },
      { timeout: 15_000, interval: 50 },
    );
    const verified = new Webhook(Buffer.from(app.secretKey), { format: 'raw' }).verify(
      hook.body,
      hook.headers as Record<string, string>,
    ) as Json;
    expect(verified).toMatchObject({ id: withdrawn.id, type: 'consent.withdrawn' });
    expect(hook.headers['x-svc-dispatch-id']).toMatch(/^dsp_/);

    // The widget's state for the notice is gone: its trigger asks again.
    expect(await isGated('#signup')).toBe(true);
    await page.click('#signup');
    await dialogOf(page).waitFor({ state: 'visible' });
    await page.keyboard.press('Escape');
    await dialogOf(page).waitFor({ state: 'detached' });
  });

  it('grants it back from the keyboard', async () => {
    await board().getByRole('button', { name: 'Grant: Offers by e-mail' }).focus();
    await page.keyboard.press('Enter');
    await poll(() => row('Offers by e-mail').locator('.bd').textContent()).toBe('Granted');
    expect(await recordStates()).toMatchObject({ marketing: 'granted' });
    await vi.waitFor(() => expect(eventsOf('consent.granted').length).toBeGreaterThanOrEqual(2), {
      timeout: 15_000,
      interval: 50,
    });
  });

  it('erase asks for confirmation; Cancel changes nothing', async () => {
    await board().getByRole('button', { name: 'Erase: Improving the site' }).click();
    const confirm = board().getByRole('group', { name: /Erase this data permanently/ });
    await confirm.waitFor();
    expect(await focused(page)).toBe('button:Cancel');
    await page.keyboard.press('Enter');
    await confirm.waitFor({ state: 'detached' });
    expect(await focused(page)).toBe('Erase: Improving the site');
    expect(await recordStates()).toMatchObject({ analytics: 'granted' });

    await page.keyboard.press('Enter');
    await confirm.waitFor();
    await page.screenshot({ path: path.join(SCREENSHOTS, 'dashboard-erase-confirm.png') });
    await confirm.getByRole('button', { name: 'Yes, erase' }).click();
    await poll(() => row('Improving the site').locator('.bd').textContent()).toBe('Erased');
    expect(await row('Improving the site').getByRole('button').count()).toBe(0);
    expect(await recordStates()).toMatchObject({ analytics: 'erased' });
    await vi.waitFor(() => expect(eventsOf('data.deleted')).toHaveLength(1), {
      timeout: 15_000,
      interval: 50,
    });
  });

  it('revokes the whole transaction', async () => {
    const article = board().locator('article');
    // A transaction-wide grant is all or nothing: not offered once a record is erased.
    expect(await article.getByRole('button', { name: 'Grant all' }).count()).toBe(0);
    await article.getByRole('button', { name: 'Revoke all' }).click();
    await poll(() => row('Offers by e-mail').locator('.bd').textContent()).toBe('Revoked');
    expect(await recordStates()).toEqual({
      essential: 'revoked',
      marketing: 'revoked',
      analytics: 'erased',
    });
    expect(await article.getByRole('button', { name: 'Revoke all' }).count()).toBe(0);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'dashboard-after.png'), fullPage: true });
  });

  it('a consent revoked elsewhere (server side, the hosted portal) is noticed on the next load', async () => {
    expect(await isGated('#signup')).toBe(true);
    await page.evaluate(() => {
      const w = window as unknown as { captured: Promise<unknown> };
      w.captured = new Promise((resolve) =>
        document.addEventListener('svc:consent:captured', (e) =>
          resolve((e as CustomEvent).detail),
        ),
      );
    });
    await page.click('#signup');
    await dialogOf(page).getByRole('button', { name: 'Accept all' }).click();
    const detail: Json = await page.evaluate(
      () => (window as unknown as { captured: Promise<unknown> }).captured,
    );
    expect(await isGated('#signup')).toBe(false);
    const revoked = await world.call(
      'POST',
      `/api/public/consents/my-transactions/${detail.consentId}/revoke`,
      { headers: { 'x-secret-key': app.secretKey }, body: {} },
    );
    expect(revoked.body.status).toBe('revoked');
    // Not known to this page yet; the widget asks the service about stored consents on load.
    expect(await isGated('#signup')).toBe(false);
    await page.reload();
    await widgetReady(page);
    await vi.waitFor(async () => expect(await isGated('#signup')).toBe(true), {
      timeout: 5_000,
      interval: 50,
    });
    expect(await storedState(page, app.siteKey, 'newsletter_signup')).toEqual({
      local: null,
      cookie: null,
    });
  });

  it('with a portal token, the same module drives the hosted portal API (for the portal page)', async () => {
    const token = (expiresAt: Date) =>
      issuePrincipalToken(world.p.rt.config, { appId: app.appId, secretVersion: 1 }, referenceId, {
        kind: 'portal',
        ttlMs: 60_000,
        now: new Date(expiresAt.getTime() - 60_000),
      }).token;
    // A page on the service's own origin, as the hosted portal is.
    await page.goto(`${world.p.url}/healthz`);
    await page.addScriptTag({ url: `${world.p.url}/svc-dashboard.v1.js` });
    const mount = (portalToken: string, id: string) =>
      page.evaluate(
        ([baseUrl, ref, t, elId]) => {
          const el = document.createElement('div');
          el.id = elId!;
          document.body.append(el);
          (
            window as unknown as {
              SvcDashboard: { mount(e: Element, o: unknown): unknown };
            }
          ).SvcDashboard.mount(el, { baseUrl, referenceId: ref, auth: { portalToken: t } });
        },
        [world.p.url, referenceId, portalToken, id],
      );
    await mount(token(new Date(Date.now() - 60_000)), 'expired');
    await poll(() => page.locator('#expired svc-dashboard-ui [role=alert]').textContent()).toBe(
      'Your consents could not be loaded.',
    );

    await mount(token(new Date(Date.now() + 600_000)), 'valid');
    const portal = page.locator('#valid svc-dashboard-ui section');
    await portal.getByRole('button', { name: 'Grant: essential' }).click();
    await poll(() =>
      portal
        .locator('tr', { has: page.getByText('essential') })
        .locator('.bd')
        .textContent(),
    ).toBe('Granted');
    expect(await recordStates()).toMatchObject({ essential: 'granted' });
    const tx = await world.transaction(app, consentId);
    expect(tx.status).toBe('partially_revoked');
  });

  it('a language named like an Object.prototype member is unknown: English, not `constructor`', async () => {
    const t = issuePrincipalToken(
      world.p.rt.config,
      { appId: app.appId, secretVersion: 1 },
      referenceId,
      { kind: 'portal', ttlMs: 600_000 },
    ).token;
    for (const lang of ['constructor', 'valueOf', '__proto__']) {
      const id = `lang-${lang.replace(/_/g, '')}`;
      await page.evaluate(
        ([baseUrl, ref, tok, elId, l]) => {
          const el = document.createElement('div');
          el.id = elId!;
          document.body.append(el);
          (
            window as unknown as {
              SvcDashboard: { mount(e: Element, o: unknown): unknown };
            }
          ).SvcDashboard.mount(el, {
            baseUrl,
            referenceId: ref,
            auth: { portalToken: tok },
            lang: l,
          });
        },
        [world.p.url, referenceId, t, id, lang],
      );
      const section = page.locator(`#${id} svc-dashboard-ui section`);
      await poll(() => section.getAttribute('lang')).toBe('en');
      expect(await section.locator('h2').textContent()).toBe('Your consent history');
    }
  });

  it('the page never saw an error', () => {
    expect(pageErrors).toEqual([]);
  });
});
