import { beforeAll, describe, expect, it } from 'vitest';
import { dialogOf, pageLog, poll, useBrowserPage, widgetReady } from './harness.js';

/**
 * The widget (docs/widget.md) in a React 18 single-page app (UMD
 * build served locally, no CDN).
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const ui = useBrowserPage('react', ['terms_ack', 'newsletter_signup', 'checkout_terms']);

beforeAll(async () => {
  await ui.page.goto(ui.world.pages.url('react.html', ui.app.siteKey));
  await widgetReady(ui.page);
  await ui.page.locator('#r-subscribe').waitFor();
});

const dialog = () => dialogOf(ui.page);
const waitForEvents = (n: number) =>
  ui.page.waitForFunction(
    (count) => (window as unknown as { __log: { events: unknown[] } }).__log.events.length >= count,
    n,
  );

describe('a React app', () => {
  it('a controlled checkbox in silent mode: React state changes only after the capture', async () => {
    await ui.page.click('#r-agree');
    await waitForEvents(1);
    // React's onChange ran from the let-through click, and re-rendered.
    await poll(() => ui.page.locator('#r-agreed').textContent()).toBe('agreed');
    expect(await ui.page.locator('#r-agree').isChecked()).toBe(true);
    expect(await dialog().count()).toBe(0);
    const consentId = (await pageLog(ui.page)).events[0].consentId;
    expect(consentId).toMatch(UUID);

    await ui.page.click('#r-register');
    await poll(async () => (await pageLog(ui.page)).submits.length).toBe(1);
    expect((await pageLog(ui.page)).submits[0]).toEqual({
      form: 'signup',
      agreed: true,
      consentId,
    });

    // Consented: unticking goes straight to React.
    await ui.page.click('#r-agree');
    await poll(() => ui.page.locator('#r-agreed').textContent()).toBe('not agreed');
    expect((await pageLog(ui.page)).events).toHaveLength(1);
  });

  it('a submit button in granular mode: onClick and onSubmit run once, after consent', async () => {
    await ui.page.fill('#r-email', 'changed@example.com');
    await ui.page.click('#r-subscribe');
    await dialog().waitFor({ state: 'visible' });
    expect((await pageLog(ui.page)).clicks).toEqual([]);

    // Now a referenceId is known: the app's portal link (data-portal-url) is offered.
    const withdraw = dialog().getByRole('link', { name: 'Withdraw consent' });
    const ref = (await pageLog(ui.page)).events[0].referenceId as string;
    expect(await withdraw.getAttribute('href')).toBe(`https://shop.example/privacy/${ref}`);
    expect(await dialog().getByRole('link', { name: 'Exercise your rights' }).count()).toBe(1);

    await dialog().getByRole('button', { name: 'Accept all' }).click();
    await poll(async () => (await pageLog(ui.page)).submits.length).toBe(2);
    const log = await pageLog(ui.page);
    expect(log.clicks).toEqual(['subscribe']);
    expect(log.submits[1]).toEqual({
      form: 'newsletter',
      email: 'changed@example.com',
      consentId: log.events[1].consentId,
    });
    expect(log.events[1]).toMatchObject({ processId: 'newsletter_signup', decision: 'accept' });
  });

  it('a trigger rendered by a route change is gated without re-binding', async () => {
    await ui.page.click('#r-nav');
    await ui.page.click('#r-pay');
    await dialog().waitFor({ state: 'visible' });
    expect((await pageLog(ui.page)).submits).toHaveLength(2);
    await dialog().getByRole('button', { name: 'Reject optional' }).click();
    await poll(async () => (await pageLog(ui.page)).submits.length).toBe(3);
    const log = await pageLog(ui.page);
    expect(log.submits[2]).toEqual({ form: 'checkout', consentId: log.events[2].consentId });
    const tx = await ui.world.transaction(ui.app, log.events[2].consentId);
    expect(tx).toMatchObject({ processId: 'checkout_terms', source: 'widget' });
    expect(
      tx.records
        .filter((r: { state: string }) => r.state === 'granted')
        .map((r: { purpose: string }) => r.purpose),
    ).toEqual(['essential']);
  });

  it('the page never saw an error', () => {
    expect(ui.pageErrors).toEqual([]);
  });
});
