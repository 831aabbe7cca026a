import { randomBytes } from 'node:crypto';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { adminService } from '../../services/admin/index.js';
import { consentsService } from '../../services/consents/index.js';
import { consoleService } from '../../services/console/index.js';
import { AREA_LABELS } from '../../services/console/tools-pages.js';
import { ledgerService } from '../../services/ledger/index.js';
import { postbackService } from '../../services/postback/index.js';
import { publicApiService } from '../../services/public-api/index.js';
import { widgetService } from '../../services/widget/index.js';
import { getApp } from '../../shared/domain/apps.js';
import { CHECKLIST_AREAS, failingCritical } from '../../shared/domain/checklist.js';
import type { EventType } from '../../shared/domain/consent/events.js';
import { checklistOf } from '../../shared/apps/go-live.js';
import { listDispatchesByReference } from '../../shared/ledger/queries.js';
import type { RunningProcess } from '../../bin/process.js';
import { createComplianceWorker } from '../../workers/compliance/index.js';
import { dispatcherWorker } from '../../workers/dispatcher/index.js';
import { relayWorker } from '../../workers/relay/index.js';
import { createTimersWorker } from '../../workers/timers/index.js';
import { client, notice, type Reply } from '../admin/client.js';
import { SCREENSHOTS, poll } from '../browser/harness.js';
import { testClock } from '../compliance/fixture.js';
import { startReceiver, type Receiver } from '../dispatch/helpers.js';
import { launchChromium } from '../helpers/chromium.js';
import { testProcess } from '../helpers/stack.js';
import { shots } from './shots.js';
import { freePort } from '../portal/fixture.js';

/**
 * The console's go-live checklist and sandbox tools (docs/api.md, Console) in real Chromium
 * against the whole pipeline (admin, record, public, postback, ledger and widget APIs; relay,
 * dispatcher, compliance and timers workers; the shared Kafka and DynamoDB Local), in one flow:
 * sign in; the failing checklist and a refused go-live naming its failing critical items; the
 * webhook pointed at the sandbox inbox, where a signed and a mis-signed test event land with
 * their signature checks; the postback simulator moving a dispatch's flag and satisfying the
 * postback items; the webhook pointed back at the app's own server (which verifies signatures
 * with `standardwebhooks`), test events passing; every attestable item attested; go-live
 * showing the live twin and its secret key once; changes without the CSRF token refused; sign
 * out. The app's server is a loopback receiver; the compliance and timers workers share a clock
 * the test moves for the expiry (as test/admin/checklist.test.ts does).
 */

const SCALE = 30;
/** A step of the flow waits on the pipeline (dispatches, the compliance worker) more than once. */
const FLOW_STEP_MS = 120_000;
const ORIGIN = 'https://shop.example';
const token = `console-tools-${randomBytes(12).toString('hex')}`;
const clock = testClock();
let p: RunningProcess;
let rcv: Receiver;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let appId: string;
let secretKey: string;
let recordKey: string;
let liveAppId: string;
/** Console errors (CSP violations among them) and page errors Chromium reported. */
const problems: string[] = [];

const api = () => client(p.url);
const admin = (method: string, urlPath: string, body?: unknown): Promise<Reply> =>
  api()(method, `/api/v1/admin${urlPath}`, body, { authorization: `Bearer ${token}` });
const consoleUrl = (x: string) => `${p.url}/console${x}`;
const inboxUrl = () => `${p.url}/sandbox/inbox/${appId}`;
const statusOf = async (id: string) => {
  const app = (await getApp(p.rt, appId))!;
  const items = (await checklistOf(p.rt, app)).areas.flatMap((a) => a.items);
  return items.find((i) => i.id === id)!.status;
};

/** A principal with a granted consent, through the record API (the app's server). */
async function user(userId: string) {
  const r = await api()(
    'POST',
    '/api/v1/consents',
    { userId, email: `${userId}@mail.example`, consents: { marketing: true } },
    { authorization: `Bearer ${recordKey}` },
  );
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body as {
    referenceId: string;
    transactionId: string;
    createdAt: string;
    expiresAt: string;
  };
}

/** The dispatch of this event for this principal, once the dispatcher wrote it to the ledger. */
async function dispatchOf(referenceId: string, event: EventType) {
  return vi.waitFor(
    async () => {
      const found = await listDispatchesByReference(p.rt, appId, referenceId);
      const d = found.items.find((x) => x.event === event);
      expect(d, `${event} for ${referenceId}`).toBeDefined();
      return d!.dispatchId;
    },
    { timeout: 60_000, interval: 100 },
  );
}

const sandboxPage = () => page.goto(consoleUrl(`/apps/${appId}/sandbox`));

/** Answers a dispatch in the simulator and waits until the page shows the resulting flag. */
async function simulate(dispatchId: string, status: string, risk: string, flag: string) {
  await sandboxPage();
  await poll(async () => {
    await page.reload();
    return page.locator(`#sim-dispatch option[value="${dispatchId}"]`).count();
  }).toBe(1);
  await page.getByLabel('Dispatch', { exact: true }).selectOption(dispatchId);
  await page.getByLabel('Status', { exact: true }).selectOption(status);
  await page.getByLabel('Risk', { exact: true }).selectOption(risk);
  await page.getByRole('button', { name: 'Send the postback' }).click();
  await page.locator('#simulated').waitFor();
  expect(await page.locator('#simulated h3').textContent()).toContain(dispatchId);
  // The simulator waits up to 2 s for the compliance worker; past that, a reload shows it.
  await poll(async () => {
    const text = await page.locator('#simulated-flag').textContent();
    if (text !== flag) await page.reload();
    return text;
  }).toBe(flag);
}

beforeAll(async () => {
  rcv = await startReceiver();
  // PUBLIC_BASE_URL is the process itself, so the console's inbox URL reaches its own inbox.
  const port = await freePort();
  p = await testProcess(
    'console-tools',
    [
      adminService,
      consentsService,
      publicApiService,
      postbackService,
      ledgerService,
      widgetService,
      consoleService,
    ],
    [
      relayWorker,
      dispatcherWorker,
      createComplianceWorker({ now: clock.now }),
      createTimersWorker({ now: clock.now }),
    ],
    {
      SVC_ADMIN_TOKEN: token,
      PORT: String(port),
      PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
      WEBHOOK_TIMEOUT_MS: '2000',
      DISPATCH_SAFETY_NET_MS: '10000',
      TIMER_SWEEP_INTERVAL_MS: '100',
      EXPIRY_SWEEP_INTERVAL_MS: '100',
      DUTY_SWEEP_INTERVAL_MS: '100',
    },
  );
  // Set up as an operator would through the admin API: the app, a notice, a record key, and
  // the widget seen on the allowlisted origin (its config call records that).
  const created = await admin('POST', '/apps', {
    name: 'Tools shop',
    environment: 'sandbox',
    webhookUrl: rcv.url('/hooks'),
    allowedOrigins: [ORIGIN],
    contactEmail: 'dpo@shop.example',
    slaTimeScale: SCALE,
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  appId = created.body.app.appId;
  secretKey = created.body.secretKey;
  expect((await admin('POST', `/apps/${appId}/notices`, notice())).status).toBe(201);
  const k = await admin('POST', `/apps/${appId}/api-keys`, {
    name: 'server',
    scopes: ['consents:read', 'consents:write', 'ledger:read'],
  });
  expect(k.status).toBe(201);
  recordKey = k.body.key;
  const w = await api()('GET', '/api/v1/widget/config/newsletter_signup', undefined, {
    'x-site-key': created.body.siteKey,
    origin: ORIGIN,
  });
  expect(w.status, JSON.stringify(w.body)).toBe(200);
  await vi.waitFor(async () => expect((await getApp(p.rt, appId))?.widgetVerifiedAt).toBeTruthy(), {
    timeout: 10_000,
    interval: 100,
  });
  // The app's own server: verifies every webhook as docs/webhooks.md shows, refuses a bad one.
  const wh = new Webhook(Buffer.from(secretKey), { format: 'raw' });
  rcv.on('/hooks', (r, res) => {
    try {
      wh.verify(r.body, r.headers as Record<string, string>);
      res.statusCode = 204;
      res.end();
    } catch {
      res.statusCode = 401;
      res.end('{"error":"bad signature"}');
    }
  });
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  page = await context.newPage();
  page.on('console', (m) => {
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource'))
      problems.push(m.text());
  });
  page.on('pageerror', (e) => problems.push(e.message));
});
afterAll(async () => {
  await context?.close();
  await browser?.close();
  rcv?.releaseAll();
  await p?.close();
  await rcv?.close();
});

describe('the go-live checklist and sandbox tools in the console', () => {
  it(
    'signs in and shows the checklist: seven areas in order, each item with severity, status, evidence and how to fix',
    async () => {
      await page.goto(consoleUrl('/sign-in'));
      await page.getByLabel('Admin token or API key').fill(token);
      await page.keyboard.press('Enter');
      await page.getByRole('heading', { name: 'Apps', level: 1 }).waitFor();
      await page.getByRole('link', { name: 'Tools shop' }).click();
      await page.getByRole('heading', { name: /Tools shop/, level: 1 }).waitFor();

      expect(await page.locator('#checklist h3[id^="area-"]').allTextContents()).toEqual(
        CHECKLIST_AREAS.map((a, i) => `${i + 1}. ${AREA_LABELS[a]}`),
      );
      const signed = page.locator('#item-webhook_signed_test');
      expect(await signed.locator('.badge').allTextContents()).toEqual(['critical', 'fail']);
      expect(await signed.locator('.evidence').textContent()).toContain(
        'No signed test event has been sent',
      );
      expect(await signed.locator('.fix').textContent()).toMatch(/^How to fix: Send a test event/);
      // Observed items pass from what the service saw; none of them can be attested.
      expect(await page.locator('#item-widget_verified .badge').allTextContents()).toEqual([
        'critical',
        'pass',
      ]);
      expect(await page.locator('#item-widget_verified').textContent()).toContain(ORIGIN);
      expect(await page.locator('#item-notice_published form').count()).toBe(0);
      // An item only a person can confirm is pending, with its Attest form.
      const stops = page.locator('#item-processing_stops_on_withdrawal');
      expect(await stops.locator('.badge').allTextContents()).toEqual(['critical', 'pending']);
      expect(await stops.getByRole('button', { name: /^Attest: Processing/ }).count()).toBe(1);
      expect(await page.locator('#checklist-summary').textContent()).toContain(
        'critical item(s) stop the go-live',
      );
    },
    FLOW_STEP_MS,
  );

  it(
    'refuses to go live, showing each failing critical item from the refusal',
    async () => {
      const expected = failingCritical(await checklistOf(p.rt, (await getApp(p.rt, appId))!)).map(
        (i) => i.id,
      );
      expect(expected).toEqual(
        expect.arrayContaining([
          'webhook_signed_test',
          'webhook_rejects_bad_signature',
          'postback_consent_withdrawn',
          'postback_consent_expired',
          'postback_data_deleted',
          'processing_stops_on_withdrawal',
        ]),
      );
      await page.getByLabel('Live webhook URL (https)').fill('https://shop.example/hooks');
      const [answer] = await Promise.all([
        page.waitForResponse((r) => r.url().endsWith('/go-live')),
        page.getByRole('button', { name: 'Go live' }).click(),
      ]);
      expect(answer.status()).toBe(409);
      await page.getByRole('heading', { name: 'Not ready to go live' }).waitFor();
      const listed = await page.locator('#go-live-refused li code').allTextContents();
      expect(listed).toEqual(expected);
      expect(await page.locator('#go-live-refused').textContent()).toContain(
        'fail: The webhook endpoint answered a signed test event with 2xx',
      );
      expect((await getApp(p.rt, appId))!.goLiveAt ?? null).toBeNull();
      // Each links to its item on the app's page.
      await page.getByRole('link', { name: 'processing_stops_on_withdrawal' }).click();
      await page.waitForURL(`${consoleUrl(`/apps/${appId}`)}#item-processing_stops_on_withdrawal`);
    },
    FLOW_STEP_MS,
  );

  it(
    'points the webhook at the sandbox inbox, where signed and mis-signed test events show their signature check',
    async () => {
      await page.getByRole('link', { name: 'Sandbox tools' }).first().click();
      await page.getByRole('heading', { name: /^Sandbox tools/, level: 1 }).waitFor();
      expect(await page.locator('#inbox-empty').count()).toBe(1);
      await page.getByRole('button', { name: 'Use the sandbox inbox' }).click();
      await page.getByText('The webhook URL is saved').waitFor();
      expect(await page.locator('#webhook-url').textContent()).toBe(inboxUrl());
      expect((await getApp(p.rt, appId))!.webhookUrl).toBe(inboxUrl());

      await page.getByLabel('Event type').selectOption('consent.granted');
      await page.getByRole('button', { name: 'Send signed' }).click();
      await page.getByText(/^Sent\. Signed: consent\.granted/).waitFor();
      expect(await page.locator('#done').textContent()).toMatch(
        /^Sent\. Signed: consent\.granted .* HTTP 200 in \d+ ms\.$/,
      );
      await page.getByLabel('Event type').selectOption('consent.withdrawn');
      await page.getByRole('button', { name: 'Send mis-signed' }).click();
      await page.getByText(/^Sent\. Mis-signed: consent\.withdrawn/).waitFor();
      // The inbox refused it as a receiver that verifies signatures does.
      expect(await page.locator('#done').textContent()).toContain('HTTP 401');

      const deliveries = page.locator('#inbox-list > li');
      expect(await deliveries.count()).toBe(2);
      const [newest, first] = [deliveries.nth(0), deliveries.nth(1)];
      expect(await newest.locator('summary').textContent()).toContain(
        'consent.withdrawn · test event',
      );
      expect(await newest.locator('summary .badge').textContent()).toBe(
        'signature does not verify',
      );
      expect(await first.locator('summary .badge').textContent()).toBe('signature valid');
      // Headers and body: the newest is open; the older one opens from the keyboard.
      expect(await newest.locator('dl').textContent()).toContain('webhook-signature');
      await first.locator('summary').focus();
      await page.keyboard.press('Enter');
      await first.locator('pre').waitFor({ state: 'visible' });
      expect(await first.locator('pre').textContent()).toContain('"type": "consent.granted"');
      expect(await first.locator('dl').textContent()).toMatch(/webhook-signaturev1,/);

      // The inbox stands in for the app's server: the checklist does not count it.
      expect(await statusOf('webhook_signed_test')).toBe('fail');
    },
    FLOW_STEP_MS,
  );

  it(
    'the postback simulator answers a consent.withdrawn dispatch, and the page shows the flag change',
    async () => {
      const u = await user('withdrawing-user');
      const del = await api()('DELETE', '/api/v1/consents/withdrawing-user', undefined, {
        authorization: `Bearer ${recordKey}`,
      });
      expect(del.status).toBe(200);
      const dispatchId = await dispatchOf(u.referenceId, 'consent.withdrawn');
      await simulate(dispatchId, 'partial', 'medium', 'at risk');
      await simulate(dispatchId, 'processed', 'none', 'ok');
      expect(await page.locator('#simulated').textContent()).toMatch(/at risk.*→.*ok/s);
      expect(await page.locator('#simulated tbody tr').count()).toBe(2);
      await vi.waitFor(
        async () => expect(await statusOf('postback_consent_withdrawn')).toBe('pass'),
        {
          timeout: 15_000,
          interval: 100,
        },
      );
      // The real dispatches went to the inbox too, signed with the app's key.
      const real = page.locator('#inbox-list > li summary', {
        hasText: 'consent.withdrawn',
        hasNotText: 'test event',
      });
      await poll(async () => {
        await page.reload();
        return real.count();
      }).toBeGreaterThan(0);
      expect(await real.first().locator('.badge').textContent()).toBe('signature valid');
    },
    FLOW_STEP_MS,
  );

  it(
    'answers data.deleted and consent.expired dispatches through the simulator',
    async () => {
      const erased = await user('erased-user');
      const erase = await api()(
        'POST',
        `/api/public/consents/my-transactions/${erased.transactionId}/erase`,
        { referenceId: erased.referenceId },
        { 'x-secret-key': secretKey },
      );
      expect(erase.status, JSON.stringify(erase.body)).toBe(200);
      await simulate(await dispatchOf(erased.referenceId, 'data.deleted'), 'deleted', 'none', 'ok');

      // 365 days in about 2.4 h: the workers' clock is moved to the reminder, then the expiry.
      expect((await admin('PATCH', `/apps/${appId}`, { slaTimeScale: 3600 })).status).toBe(200);
      const u = await user('expiring-user');
      const start = Date.parse(u.createdAt);
      const end = Date.parse(u.expiresAt);
      const compressed = (ms: number) => Math.ceil(start + (ms - start) / 3600);
      const moveTo = (ms: number) => clock.advance(Math.max(0, ms + 500 - clock.now()));
      moveTo(compressed(end - 30 * 86_400_000));
      await dispatchOf(u.referenceId, 'consent.expiry.reminder');
      moveTo(compressed(end));
      await simulate(await dispatchOf(u.referenceId, 'consent.expired'), 'processed', 'low', 'ok');
      await shots(page, 'sandbox');
      for (const id of ['postback_data_deleted', 'postback_consent_expired'])
        await vi.waitFor(async () => expect(await statusOf(id)).toBe('pass'), {
          timeout: 15_000,
          interval: 100,
        });
    },
    FLOW_STEP_MS,
  );

  it(
    'points the webhook back at the app’s server, whose answers to test events pass the checklist',
    async () => {
      await sandboxPage();
      await page.getByLabel('Your endpoint’s URL').fill(rcv.url('/hooks'));
      await page.getByRole('button', { name: 'Save the webhook URL' }).click();
      await page.getByText('The webhook URL is saved').waitFor();
      await page.getByLabel('Event type').selectOption('consent.withdrawn');
      await page.getByRole('button', { name: 'Send signed' }).click();
      await page.getByText(/^Sent\. Signed: consent\.withdrawn .* HTTP 204/).waitFor();
      await page.getByRole('button', { name: 'Send mis-signed' }).click();
      await page.getByText(/^Sent\. Mis-signed: consent\.withdrawn .* HTTP 401/).waitFor();
      expect(await page.locator('#last-signed').textContent()).toContain(rcv.url('/hooks'));
      const verdicts = rcv.at('/hooks').filter((r) => r.headers['x-svc-test-event'] === 'true');
      expect(verdicts).toHaveLength(2);

      await page.goto(consoleUrl(`/apps/${appId}`));
      for (const id of ['webhook_signed_test', 'webhook_rejects_bad_signature'])
        expect(await page.locator(`#item-${id} .badge`).allTextContents()).toEqual([
          'critical',
          'pass',
        ]);
    },
    FLOW_STEP_MS,
  );

  it(
    'attests the items only a person can confirm (who: the session’s principal; when), from the keyboard too',
    async () => {
      const checklist = page.locator('#checklist');
      await checklist.screenshot({
        path: path.join(SCREENSHOTS, 'console-checklist-section-1280.png'),
      });
      // The first by keyboard: type the note, Tab to its button, Enter.
      const note = 'CRM and mailer stop on consent.withdrawn and consent.expired';
      await page.locator('#note-processing_stops_on_withdrawal').focus();
      await page.keyboard.type(note);
      await page.keyboard.press('Tab');
      expect(await page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toMatch(
        /^Attest: Processing/,
      );
      await page.keyboard.press('Enter');
      await page.getByText('The item is attested').waitFor();
      expect(new URL(page.url()).hash).toBe('#item-processing_stops_on_withdrawal');
      const item = page.locator('#item-processing_stops_on_withdrawal');
      expect(await item.locator('.badge').allTextContents()).toEqual(['critical', 'attested']);
      expect(await item.locator('.evidence').textContent()).toMatch(
        new RegExp(`Attested by operator \\(console\\) at \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z: ${note}`),
      );
      expect(await item.locator('form').count()).toBe(0);
      // The rest by mouse, one form at a time (each answer is the page again).
      for (let left = await page.locator('form.attest').count(); left > 0; left--) {
        const form = page.locator('form.attest').first();
        await form.locator('textarea').fill('Checked in the release review');
        await form.getByRole('button').click();
        await poll(() => page.locator('form.attest').count()).toBe(left - 1);
      }
      await poll(async () => {
        await page.reload();
        return page.locator('#checklist-summary').textContent();
      }).toContain('every critical item is satisfied');
      await shots(page, 'checklist');
    },
    FLOW_STEP_MS,
  );

  it(
    'goes live: shows the live twin and its secret key once',
    async () => {
      await page.getByLabel('Live webhook URL (https)').fill('https://shop.example/hooks');
      page.once('dialog', (d) => void d.accept());
      await page.getByRole('button', { name: 'Go live' }).click();
      await page.getByRole('heading', { name: 'Live app created' }).waitFor();
      const secret = ((await page.locator('#shown-once').textContent()) ?? '').trim();
      expect(secret).toMatch(/^svc_sk_[0-9A-Za-z]{40}$/);
      const link = page.locator('#live-app a');
      liveAppId = ((await link.textContent()) ?? '').trim();
      const live = (await getApp(p.rt, liveAppId))!;
      expect(live).toMatchObject({ environment: 'live', webhookUrl: 'https://shop.example/hooks' });
      expect(await page.locator('#live-site-key').textContent()).toBe(live.siteKey);
      expect((await getApp(p.rt, appId))!).toMatchObject({
        liveAppId,
        goLiveBy: 'operator (console)',
      });
      // The live app's secret key authenticates (an empty postback is then only invalid).
      const pb = await api()(
        'POST',
        '/api/v1/server/consent/action',
        {},
        { 'x-secret-key': secret },
      );
      expect(pb.status).toBe(422);

      await link.click();
      await page.getByRole('heading', { name: /Tools shop/, level: 1 }).waitFor();
      expect(await page.locator('h1 .badge').textContent()).toBe('live');
      expect(await page.locator('#go-live-state').textContent()).toContain(appId);
      expect(await page.content()).not.toContain(secret);
      expect(await page.locator('#sandbox').count()).toBe(0);
      expect((await page.goto(consoleUrl(`/apps/${liveAppId}/sandbox`)))?.status()).toBe(409);

      await page.goto(consoleUrl(`/apps/${appId}`));
      expect(await page.locator('#go-live-state').textContent()).toContain(liveAppId);
      expect(await page.locator('#go-live').count()).toBe(0);
    },
    FLOW_STEP_MS,
  );

  it(
    'refuses a change without the CSRF token: 403 problem+json, and nothing is done',
    async () => {
      await sandboxPage();
      const tests = () => rcv.received.filter((r) => r.headers['x-svc-test-event'] === 'true');
      const before = tests().length;
      const post = (url: string, body: string) =>
        page.evaluate(
          async ([u, b]) => {
            const r = await fetch(u!, {
              method: 'POST',
              headers: { 'content-type': 'application/x-www-form-urlencoded' },
              body: b!,
            });
            return { status: r.status, type: r.headers.get('content-type'), body: await r.text() };
          },
          [url, body],
        );
      const base = `/console/apps/${appId}`;
      for (const [url, body] of [
        [`${base}/sandbox/test-events`, 'type=consent.granted&variant=signed'],
        [`${base}/sandbox/webhook-url`, `webhookUrl=${encodeURIComponent(inboxUrl())}`],
        [`${base}/checklist/grievance_contact/attest`, 'note=sneaky'],
      ] as const) {
        const answer = await post(url, body);
        expect(answer.status, url).toBe(403);
        expect(answer.type).toMatch(/^application\/problem\+json/);
        expect(JSON.parse(answer.body).code).toBe('SVC_FORBIDDEN');
      }
      expect(tests()).toHaveLength(before);
      expect((await getApp(p.rt, appId))!.webhookUrl).toBe(rcv.url('/hooks'));
      const app = (await getApp(p.rt, appId))!;
      const grievance = (await checklistOf(p.rt, app)).areas
        .flatMap((a) => a.items)
        .find((i) => i.id === 'grievance_contact')!;
      expect(grievance.evidence).not.toContain('sneaky');
    },
    FLOW_STEP_MS,
  );

  it(
    'signs out',
    async () => {
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByRole('heading', { name: 'Sign in' }).waitFor();
      await page.goto(consoleUrl(`/apps/${appId}/sandbox`));
      expect(page.url()).toBe(consoleUrl('/sign-in'));
      expect(problems).toEqual([]);
    },
    FLOW_STEP_MS,
  );
});
