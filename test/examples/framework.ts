import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  dialogOf,
  isGated,
  startWorld,
  storedState,
  widgetReady,
  type BrowserApp,
  type World,
} from '../browser/harness.js';
import { freePort } from '../portal/fixture.js';
import { cachedBuild } from './build-cache.js';

/**
 * One framework example (examples/<name>) built from the npm registry (cached: build-cache.ts),
 * served as its README says, and driven in Chromium against the real stack. Every example has
 * the same page: on `/` a gated button (#subscribe, newsletter_signup) counting its clicks in
 * #subscribed, a gated form (#signup, account_signup) posting to the app's /api/signup, which
 * prints the fields as a `{"signup": …}` line and answers them back, and a client-side link
 * (#to-checkout) to `/checkout` with a gated #pay (checkout_terms) counting in #paid.
 */
export interface FrameworkExample {
  name: string;
  /** The first page's HTML comes from the server with the gated elements in it. */
  serverRendered: boolean;
  /** How the README serves the built copy in `dir` on 127.0.0.1:`port`. */
  serve(o: { dir: string; port: number; siteKey: string; widgetUrl: string }): {
    args: string[];
    env: Record<string, string>;
  };
}

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const TRIGGERS = ['newsletter_signup', 'account_signup', 'checkout_terms'];

/** Settings that keep the frameworks' CLIs from asking about or sending usage data. */
const QUIET = {
  NEXT_TELEMETRY_DISABLED: '1',
  NG_CLI_ANALYTICS: 'false',
  NUXT_TELEMETRY_DISABLED: '1',
};

export function describeFrameworkExample(x: FrameworkExample) {
  let world: World;
  let app: BrowserApp;
  let page: Page;
  let origin: string;
  let server: ChildProcess | undefined;
  const output: string[] = [];
  const signups: Record<string, string>[] = [];
  const consoleProblems: string[] = [];
  const pageErrors: Error[] = [];

  beforeAll(async () => {
    const built = await cachedBuild(path.join(root, 'examples', x.name), { env: QUIET });
    world = await startWorld(`example-${x.name}`);
    const port = await freePort();
    origin = `http://127.0.0.1:${port}`;
    app = await world.createApp(
      TRIGGERS.map((triggerKey) => ({ triggerKey })),
      { allowedOrigins: [origin] },
    );
    const { args, env } = x.serve({
      dir: built.dir,
      port,
      siteKey: app.siteKey,
      widgetUrl: world.p.url,
    });
    server = spawn(process.execPath, args, {
      cwd: built.dir,
      env: { ...process.env, ...QUIET, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    for (const stream of [server.stdout!, server.stderr!]) {
      createInterface({ input: stream }).on('line', (line) => {
        output.push(line);
        const m = /^\{"signup":.*\}$/.exec(line.trim());
        if (m) signups.push((JSON.parse(m[0]) as { signup: Record<string, string> }).signup);
      });
    }
    await vi.waitFor(
      async () => {
        expect(server!.exitCode, output.join('\n')).toBeNull();
        expect((await fetch(`${origin}/`)).status).toBe(200);
      },
      { timeout: 60_000, interval: 200 },
    );
    page = await world.browser.newPage();
    // A hydration mismatch shows as one of these in the production builds: React's as an
    // uncaught "Minified React error #418", Vue's (Nuxt) as the console error "Hydration
    // completed but contains mismatches.".
    page.on('pageerror', (e) => pageErrors.push(e));
    page.on('console', (m) => {
      // The browser's own favicon request is no part of the app.
      if (new URL(m.location().url || 'about:blank').pathname === '/favicon.ico') return;
      if (m.type() === 'warning' || m.type() === 'error')
        consoleProblems.push(`${m.type()}: ${m.text()} (${m.location().url})`);
    });
    // networkidle: the framework's scripts have loaded and run (hydrated) before the clicks.
    await page.goto(`${origin}/`, { waitUntil: 'networkidle' });
    await widgetReady(page);
  }, 900_000);

  afterAll(async () => {
    if (server && server.exitCode === null && server.signalCode === null) {
      const exited = new Promise((r) => server!.once('exit', r));
      server.kill('SIGTERM');
      await exited;
    }
    await world?.close();
  });

  const dialog = () => dialogOf(page);
  const text = (selector: string) => page.locator(selector).textContent();

  describe(`examples/${x.name} in Chromium`, () => {
    it('the widget tag comes with the page; gated elements too when server-rendered', async () => {
      const html = await (await fetch(`${origin}/`)).text();
      expect(html).toContain(`data-site-key="${app.siteKey}"`);
      expect(html).toContain(`${world.p.url}/svc-consent.v1.js`);
      for (const trigger of ['newsletter_signup', 'account_signup'])
        expect(html.includes(`svc-trigger="${trigger}"`)).toBe(x.serverRendered);
    });

    it('a gated click waits for consent; then the button’s own handler runs', async () => {
      expect(await isGated(page, '#subscribe')).toBe(true);
      await page.click('#subscribe');
      await dialog().waitFor({ state: 'visible' });
      expect(await text('#subscribed')).toBe('Subscribed: 0');

      await dialog().getByRole('button', { name: 'Accept all' }).click();
      await expect.poll(() => text('#subscribed'), { timeout: 10_000 }).toBe('Subscribed: 1');
      expect(await isGated(page, '#subscribe')).toBe(false);

      // Consented: the next click goes straight to the handler.
      await page.click('#subscribe');
      await expect.poll(() => text('#subscribed')).toBe('Subscribed: 2');
      expect(await dialog().isVisible()).toBe(false);
    });

    it('a trigger on a route reached without a reload is gated', async () => {
      await page.evaluate(() => ((window as unknown as { __kept: string }).__kept = 'same page'));
      await page.click('#to-checkout');
      await page.locator('#pay').waitFor();
      expect(new URL(page.url()).pathname).toBe('/checkout');
      // The window is the one from before the click: the router changed the page, no reload.
      expect(await page.evaluate(() => (window as unknown as { __kept?: string }).__kept)).toBe(
        'same page',
      );

      expect(await isGated(page, '#pay')).toBe(true);
      await page.click('#pay');
      await dialog().waitFor({ state: 'visible' });
      expect(await text('#paid')).toBe('Paid: 0');
      await dialog().getByRole('button', { name: 'Reject optional' }).click();
      await expect.poll(() => text('#paid'), { timeout: 10_000 }).toBe('Paid: 1');

      await page.click('#to-home');
      await page.locator('#signup').waitFor();
      expect(await page.evaluate(() => (window as unknown as { __kept?: string }).__kept)).toBe(
        'same page',
      );
    });

    it('the gated form’s submission brings svc-transaction-id to the app’s server', async () => {
      expect(await isGated(page, '#signup-submit')).toBe(true);
      const answered = page.waitForResponse(
        (r) => r.url() === `${origin}/api/signup` && r.request().method() === 'POST',
      );
      await page.click('#signup-submit');
      await dialog().waitFor({ state: 'visible' });
      expect(signups).toEqual([]);
      await dialog().getByRole('button', { name: 'Accept all' }).click();

      const echoed = (await (await answered).json()) as Record<string, string>;
      await vi.waitFor(() => expect(signups).toHaveLength(1), { timeout: 10_000 });
      const id = signups[0]!['svc-transaction-id']!;
      expect(id).toMatch(UUID);
      expect(signups[0]).toEqual({ email: 'visitor@example.com', 'svc-transaction-id': id });
      expect(echoed).toEqual(signups[0]);

      // The id is the consent the widget captured for this form's trigger.
      const tx = await world.transaction(app, id);
      expect(tx).toMatchObject({ processId: 'account_signup', source: 'widget' });
      const stored = await storedState(page, app.siteKey, 'account_signup');
      expect(JSON.parse(stored.local ?? '{}')).toMatchObject({ consentId: id });
    });

    it('no hydration warning, console error or uncaught error on the way', () => {
      expect(consoleProblems).toEqual([]);
      expect(pageErrors).toEqual([]);
    });
  });
}
