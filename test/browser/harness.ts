import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, expect } from 'vitest';
import { adminService } from '../../services/admin/index.js';
import { consentsService } from '../../services/consents/index.js';
import { publicApiService } from '../../services/public-api/index.js';
import { widgetAssetsService } from '../../services/widget-assets/index.js';
import { widgetService } from '../../services/widget/index.js';
import type { RunningProcess } from '../../bin/process.js';
import type { ServiceModule, WorkerModule } from '../../shared/module.js';
import { launchChromium } from '../helpers/chromium.js';
import { testProcess } from '../helpers/stack.js';

/**
 * Real-browser harness: the service (admin, record, public and widget APIs plus the widget
 * scripts) on one port, the test pages on another (so the widget is cross-origin, as in
 * production), and a Debian Chromium driven by playwright-core. Nothing is mocked.
 */

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
export const SCREENSHOTS = path.join(root, 'test-results', 'screenshots');

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are asserted field by field
export type Json = any;

export interface NoticeSpec {
  triggerKey: string;
  validityDays?: number;
}

/** Purposes of every test notice: one required, two optional, each with itemised data. */
export const PURPOSES = [
  { name: 'essential', required: true, dataItems: ['email address'] },
  { name: 'marketing', required: false, dataItems: ['email address', 'name'] },
  { name: 'analytics', required: false, dataItems: ['device type', 'pages visited'] },
];

export function noticeBody(n: NoticeSpec) {
  return {
    kind: 'data_collection',
    triggerKey: n.triggerKey,
    defaultLanguage: 'en',
    purposes: PURPOSES,
    translations: {
      en: {
        title: `We need your consent (${n.triggerKey})`,
        body: 'We use your data only for the purposes you choose below.',
        purposes: {
          essential: {
            label: 'Running your account',
            description: 'Needed to provide the service.',
          },
          marketing: {
            label: 'Offers by e-mail',
            description: 'News and offers we think you will like.',
          },
          analytics: {
            label: 'Improving the site',
            description: 'How the site is used, in aggregate.',
          },
        },
      },
      hi: {
        title: 'हमें आपकी सहमति चाहिए',
        body: 'हम आपके डेटा का उपयोग केवल उन्हीं उद्देश्यों के लिए करते हैं जिन्हें आप नीचे चुनते हैं।',
        purposes: {
          essential: { label: 'आपका खाता चलाना', description: 'सेवा देने के लिए आवश्यक।' },
          marketing: { label: 'ई-मेल द्वारा ऑफ़र', description: 'समाचार और ऑफ़र।' },
          analytics: { label: 'साइट में सुधार', description: 'साइट का उपयोग कैसे होता है।' },
        },
      },
    },
    validityDays: n.validityDays ?? 180,
  };
}

export interface BrowserApp {
  appId: string;
  siteKey: string;
  secretKey: string;
}

/** The test pages on 127.0.0.1 (allowlisted) and, for the wrong-origin case, on localhost. */
export interface PageServer {
  origin: string;
  /** The same server under another origin (localhost), never on any allowlist. */
  otherOrigin: string;
  url(page: string, siteKey: string, o?: { ref?: string; token?: string; other?: boolean }): string;
  close(): Promise<void>;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

const VENDOR: Record<string, string> = {
  '/vendor/react.js': 'node_modules/react/umd/react.production.min.js',
  '/vendor/react-dom.js': 'node_modules/react-dom/umd/react-dom.production.min.js',
};

/** plain.html without the widget's script tag: the same page as it is with no widget. */
const NOSCRIPT = 'noscript.html';

function withoutWidget(html: string): string {
  const tag = /\n\s*<script [^>]*src="\{\{WIDGET_URL\}\}\/svc-consent\.v1\.js"[^>]*><\/script>/;
  if (!tag.test(html)) throw new Error('plain.html no longer loads the widget script');
  return html
    .replace(tag, '')
    .replace('<title>Shop: plain HTML</title>', '<title>Shop: no widget script</title>');
}

/** A strict policy: no inline script or style, scripts only from the page and the widget. */
export function strictCsp(widgetOrigin: string): string {
  return [
    "default-src 'none'",
    `script-src 'self' ${widgetOrigin}`,
    `style-src ${widgetOrigin}`,
    `connect-src ${widgetOrigin}`,
    "img-src 'self'",
    "form-action 'self'",
    "base-uri 'none'",
    "require-trusted-types-for 'script'",
    'trusted-types svc-consent',
  ].join('; ');
}

export async function startPageServer(widgetUrl: string): Promise<PageServer> {
  const widgetOrigin = new URL(widgetUrl).origin;
  const pagesDir = path.join(here, 'pages');
  const server = http.createServer((req, res) => {
    void (async () => {
      const u = new URL(req.url ?? '/', 'http://page.test');
      if (u.pathname === '/echo') {
        // What a native form submission sent, as the next page shows it.
        const fields = JSON.stringify(Object.fromEntries(u.searchParams));
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end(`<!doctype html><title>echo</title><pre id="echo">${escapeHtml(fields)}</pre>`);
        return;
      }
      const vendor = VENDOR[u.pathname];
      const name = path.basename(u.pathname);
      const file = vendor
        ? path.join(root, vendor)
        : path.join(pagesDir, name === NOSCRIPT ? 'plain.html' : name);
      const type = TYPES[path.extname(file)];
      let body: string;
      try {
        if (!type) throw new Error('unknown type');
        body = await fs.readFile(file, 'utf8');
      } catch {
        res.writeHead(404).end();
        return;
      }
      // Thrown, not a 404: the run reports it as an unhandled error with its message.
      if (name === NOSCRIPT) body = withoutWidget(body);
      const headers: Record<string, string> = { 'content-type': type, 'cache-control': 'no-store' };
      if (path.extname(file) === '.html') {
        const key = u.searchParams.get('key') ?? '';
        const ref = u.searchParams.get('ref') ?? '';
        // The principal token the app's server minted for its signed-in user (data-token).
        const token = u.searchParams.get('token') ?? '';
        if (
          !/^APP_[A-Za-z0-9]+$/.test(key) ||
          !/^(SVC-REF-[0-9A-Z]{8})?$/.test(ref) ||
          !/^(svc_pt_[A-Za-z0-9_.-]+)?$/.test(token)
        ) {
          res.writeHead(400).end('bad key, ref or token');
          return;
        }
        body = body
          .replaceAll('{{WIDGET_URL}}', widgetUrl)
          .replaceAll('{{SITE_KEY}}', key)
          .replaceAll('{{REF}}', ref)
          .replaceAll('{{TOKEN}}', token);
        if (/^(.+-)?csp\.html$/.test(path.basename(file)))
          headers['content-security-policy'] = strictCsp(widgetOrigin);
      }
      res.writeHead(200, headers);
      res.end(body);
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const origin = `http://127.0.0.1:${port}`;
  const otherOrigin = `http://localhost:${port}`;
  return {
    origin,
    otherOrigin,
    url: (page, siteKey, o = {}) =>
      `${o.other ? otherOrigin : origin}/${page}?key=${siteKey}${o.ref ? `&ref=${o.ref}` : ''}${
        o.token ? `&token=${o.token}` : ''
      }`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** One test file's world: service process, page server, Chromium, and admin helpers. */
export async function startWorld(
  name: string,
  extraServices: ServiceModule[] = [],
  workers: WorkerModule[] = [],
) {
  const token = `browser-admin-${randomBytes(12).toString('hex')}`;
  const p: RunningProcess = await testProcess(
    `browser-${name}`,
    [
      adminService,
      consentsService,
      publicApiService,
      widgetService,
      widgetAssetsService,
      ...extraServices,
    ],
    workers,
    { SVC_ADMIN_TOKEN: token },
  );
  const pages = await startPageServer(p.url);
  const browser = await launchChromium();
  await fs.mkdir(SCREENSHOTS, { recursive: true });

  async function call(
    method: string,
    urlPath: string,
    o: { headers?: Record<string, string>; body?: unknown } = {},
  ): Promise<{ status: number; headers: Headers; body: Json }> {
    const r = await fetch(`${p.url}${urlPath}`, {
      method,
      headers: {
        ...(o.body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...o.headers,
      },
      ...(o.body !== undefined ? { body: JSON.stringify(o.body) } : {}),
    });
    const text = await r.text();
    expect(r.status, `${method} ${urlPath} → ${text}`).toBeLessThan(500);
    return { status: r.status, headers: r.headers, body: text ? JSON.parse(text) : undefined };
  }

  async function admin(method: string, urlPath: string, body?: unknown): Promise<Json> {
    const r = await call(method, `/api/v1/admin${urlPath}`, {
      headers: { authorization: `Bearer ${token}` },
      ...(body === undefined ? {} : { body }),
    });
    expect(r.status, JSON.stringify(r.body)).toBeLessThan(300);
    return r.body;
  }

  /** A sandbox app allowlisting the page server's 127.0.0.1 origin, with one notice per key. */
  async function createApp(notices: NoticeSpec[], extra: Record<string, unknown> = {}) {
    const created = await admin('POST', '/apps', {
      name: `Browser ${name}`,
      environment: 'sandbox',
      webhookUrl: 'http://127.0.0.1:9/hook',
      allowedOrigins: [pages.origin],
      contactEmail: 'dpo@shop.example',
      ...extra,
    });
    const app: BrowserApp = {
      appId: created.app.appId,
      siteKey: created.siteKey,
      secretKey: created.secretKey,
    };
    for (const n of notices) await admin('POST', `/apps/${app.appId}/notices`, noticeBody(n));
    return app;
  }

  /** What the app's server does for its signed-in user: mint a principal token (secret key). */
  async function mintToken(app: BrowserApp, referenceId: string): Promise<string> {
    const r = await call('POST', '/api/public/consents/principal-tokens', {
      headers: { 'x-secret-key': app.secretKey },
      body: { referenceId },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return r.body.token as string;
  }

  /** A transaction as the app's server sees it (secret key), for checking what was stored. */
  async function transaction(app: BrowserApp, id: string): Promise<Json> {
    const r = await call('GET', `/api/public/consents/my-transactions/${id}`, {
      headers: { 'x-secret-key': app.secretKey },
    });
    expect(r.status).toBe(200);
    return r.body;
  }

  return {
    p,
    pages,
    browser,
    call,
    admin,
    createApp,
    mintToken,
    transaction,
    async close() {
      await browser.close();
      await pages.close();
      await p.close();
    },
  };
}

export type World = Awaited<ReturnType<typeof startWorld>>;

/**
 * A widget test file's shared setup, registered as its hooks: a world (`startWorld`) with one
 * sandbox app that has a notice per trigger key, and one Chromium page whose uncaught errors
 * are collected in `pageErrors`. Read `ui.world`, `ui.app` and `ui.page` inside tests (set in
 * beforeAll); the file's own beforeAll runs after this one, with them set.
 */
export function useBrowserPage(name: string, triggerKeys: string[]) {
  const ui = { pageErrors: [] as Error[] } as {
    world: World;
    app: BrowserApp;
    page: Page;
    pageErrors: Error[];
  };
  beforeAll(async () => {
    ui.world = await startWorld(name);
    ui.app = await ui.world.createApp(triggerKeys.map((triggerKey) => ({ triggerKey })));
    ui.page = await ui.world.browser.newPage();
    ui.page.on('pageerror', (e) => ui.pageErrors.push(e));
  });
  afterAll(async () => {
    await ui.world?.close();
  });
  return ui;
}

/* ---- page helpers ---- */

/**
 * expect.poll with room for a real round trip (DynamoDB write + Kafka publish) on a busy
 * machine: the default one second is too short for anything that waits on the service.
 */
export const poll = <T>(fn: () => T | Promise<T>, o: { timeout?: number } = {}) =>
  expect.poll(fn, { timeout: 10_000, interval: 50, ...o });

/** The consent dialog inside the widget's shadow root (Playwright's CSS engine pierces it). */
export const dialogOf = (page: Page) => page.locator('svc-consent-ui dialog');

/** What has keyboard focus, looking inside the widget's and dashboard's shadow roots. */
export function focused(page: Page): Promise<string> {
  return page.evaluate(() => {
    let a: Element | null = document.activeElement;
    while (a?.shadowRoot?.activeElement) a = a.shadowRoot.activeElement;
    if (!a) return '';
    return (
      a.getAttribute('aria-label') ??
      a.getAttribute('data-act') ??
      (a.id || `${a.tagName.toLowerCase()}:${(a.textContent ?? '').trim()}`)
    );
  });
}

/** Whether the widget holds back the element's action until consent (SvcConsent.isGated). */
export function isGated(page: Page, selector: string): Promise<boolean> {
  return page.evaluate(
    (s) =>
      (
        window as unknown as { SvcConsent: { isGated(el: Element | null): boolean } }
      ).SvcConsent.isGated(document.querySelector(s)),
    selector,
  );
}

/** Everything the page's own script recorded (window.__log). */
export function pageLog(page: Page): Promise<Json> {
  return page.evaluate(() => (window as unknown as { __log: unknown }).__log);
}

/** The stored consent state, from localStorage and from the cookie of the same name. */
export function storedState(page: Page, siteKey: string, processId: string) {
  return page.evaluate((name) => {
    const m = document.cookie.match(new RegExp(`(?:^|; )${name}=([^;]*)`));
    return {
      local: localStorage.getItem(name),
      cookie: m ? decodeURIComponent(m[1]!) : null,
    };
  }, `svc_${siteKey}_${processId}`);
}

/** Waits until the widget has run (its global exists) on the current page. */
export async function widgetReady(page: Page) {
  await page.waitForFunction(() => 'SvcConsent' in window);
}

/** Fresh state for the next test on a reused page: storage, cookies, reload. */
export async function resetPage(page: Page, url: string) {
  await page.context().clearCookies();
  await page.goto(url);
  await page.evaluate(() => localStorage.clear());
  await page.goto(url);
  await widgetReady(page);
}
