import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  SCREENSHOTS,
  poll,
  startWorld,
  widgetReady,
  type BrowserApp,
  type World,
} from './harness.js';

/**
 * Filing a grievance from the embeddable dashboard in a real Chromium: the principal types it
 * into the dashboard on the app's page, the dashboard files it through the public API with the
 * principal token the app's server minted, and the app then finds it through its API key.
 */

let world: World;
let app: BrowserApp;
let page: Page;
let apiKey: string;
const pageErrors: Error[] = [];

beforeAll(async () => {
  world = await startWorld('grievance');
  app = await world.createApp([{ triggerKey: 'newsletter_signup' }]);
  const key = await world.admin('POST', `/apps/${app.appId}/api-keys`, {
    name: 'server',
    scopes: ['consents:read', 'consents:write'],
  });
  apiKey = key.key as string;
  page = await world.browser.newPage({ viewport: { width: 1000, height: 1200 } });
  page.on('pageerror', (e) => pageErrors.push(e));
});

afterAll(async () => {
  await world?.close();
});

const board = () => page.locator('svc-dashboard-ui section.w');

describe('grievances in the dashboard', () => {
  it('the principal files one from the dashboard; it is listed there and reaches the app', async () => {
    const created = await world.call('POST', '/api/v1/consents', {
      headers: { authorization: `Bearer ${apiKey}` },
      body: { userId: 'u-grievance', email: 'gita@example.test', consents: { essential: true } },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const referenceId = created.body.referenceId as string;
    const token = await world.mintToken(app, referenceId);

    await page.goto(world.pages.url('account.html', app.siteKey, { ref: referenceId, token }));
    await widgetReady(page);
    await board().getByRole('heading', { name: 'Your grievances' }).waitFor();
    await poll(() => board().textContent()).toContain('You have not filed a grievance.');

    await board().getByLabel('Subject').fill('Offers keep coming');
    await board()
      .getByLabel('Your grievance', { exact: true })
      .fill('I withdrew marketing consent last week.');
    await board().getByRole('button', { name: 'File grievance' }).click();

    await poll(() => board().textContent()).toContain(
      'Your grievance was filed. The answer is due by',
    );
    const item = board().locator('li[data-grievance]');
    await poll(() => item.count()).toBe(1);
    expect(await item.textContent()).toContain('Offers keep coming');
    expect(await item.textContent()).toContain('Awaiting answer');
    // The form is cleared for the next one.
    expect(await board().getByLabel('Subject').inputValue()).toBe('');
    await page.screenshot({
      path: path.join(SCREENSHOTS, 'dashboard-grievance.png'),
      fullPage: true,
    });

    const listed = await world.call('GET', '/api/v1/grievances', {
      headers: { authorization: `Bearer ${apiKey}` },
    });
    expect(listed.status).toBe(200);
    expect(listed.body.items).toEqual([
      expect.objectContaining({
        referenceId,
        subject: 'Offers keep coming',
        description: 'I withdrew marketing consent last week.',
        filedVia: 'dashboard',
        status: 'open',
      }),
    ]);
    expect(pageErrors).toEqual([]);
  });
});
