import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  captureConsent,
  getStoredTransaction,
  getTransaction,
  type CaptureInput,
} from '../../shared/domain/consent/index.js';
import type { NoticeVersion } from '../../shared/domain/types.js';
import { startConsentProcess, type ConsentFixture, type TestApp } from './fixture.js';

let f: ConsentFixture;
let a: TestApp;
let notice: NoticeVersion;

beforeAll(async () => {
  f = await startConsentProcess('consent-capture');
  a = await f.createApp({
    notice: {
      triggerKey: 'checkout',
      purposes: [
        { name: 'essential', required: true },
        { name: 'analytics' },
        { name: 'marketing' },
      ],
    },
  });
  notice = a.notice!;
});
afterAll(async () => {
  await f?.close();
});

const input = (o: Partial<CaptureInput> = {}): CaptureInput => ({
  mode: 'granular',
  granted: ['essential', 'marketing'],
  language: 'hi',
  pageUrl: 'https://shop.example/checkout',
  userAgent: 'Mozilla/5.0 test',
  ipHash: 'a'.repeat(64),
  ...o,
});

describe('captureConsent', () => {
  it('creates a principal and a transaction with proof; emits consent.created and consent.granted', async () => {
    const before = Date.now();
    const c = await captureConsent(f.p.rt, a.app, notice, input());
    expect(c.referenceId).toMatch(/^SVC-REF-[0-9A-HJKMNP-TV-Z]{8}$/);
    expect(c.transactionId).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
    const created = Date.parse(c.expiresAt) - 180 * 86_400_000;
    expect(created).toBeGreaterThanOrEqual(before);

    const view = await getTransaction(f.p.rt, a.app.appId, c.transactionId);
    expect(view).toMatchObject({
      transactionId: c.transactionId,
      referenceId: c.referenceId,
      processId: 'checkout',
      noticeId: notice.noticeId,
      noticeVersion: 1,
      language: 'hi',
      source: 'widget',
      status: 'active',
      expiresAt: c.expiresAt,
    });
    expect(view?.records.map((r) => [r.purpose, r.state])).toEqual([
      ['essential', 'granted'],
      ['analytics', 'denied'],
      ['marketing', 'granted'],
    ]);
    expect(view).not.toHaveProperty('userId');

    const stored = await getStoredTransaction(f.p.rt, a.app.appId, c.transactionId);
    expect(stored?.proof).toEqual({
      noticeVersion: 1,
      textHash: notice.textHash,
      language: 'hi',
      capturedAt: view!.createdAt,
      pageUrl: 'https://shop.example/checkout',
      userAgent: 'Mozilla/5.0 test',
      ipHash: 'a'.repeat(64),
      mode: 'granular',
    });

    const events = await f.waitForEvents(c.referenceId, 2);
    expect(events.map((e) => e.type)).toEqual(['consent.created', 'consent.granted']);
    expect(events[0]!.data).toMatchObject({
      referenceId: c.referenceId,
      userId: null,
      consentId: c.transactionId,
      purposes: { essential: true, analytics: false, marketing: true },
      noticeId: notice.noticeId,
      noticeVersion: 1,
      expiresAt: c.expiresAt,
    });
    expect(events[1]!.data.purposes).toEqual({ essential: true, marketing: true });
    expect(events[1]!.data.recordIds).toEqual([
      view!.records[0]!.recordId,
      view!.records[2]!.recordId,
    ]);
  });

  it('silent mode grants every purpose', async () => {
    const c = await captureConsent(f.p.rt, a.app, notice, input({ mode: 'silent', granted: [] }));
    const view = await getTransaction(f.p.rt, a.app.appId, c.transactionId);
    expect(view?.records.map((r) => r.state)).toEqual(['granted', 'granted', 'granted']);
  });

  it('a refused capture (required purpose missing, unknown purpose) writes nothing and emits nothing', async () => {
    const before = await f.itemsOf(a.app.appId);
    const count = f.messages.length;
    await expect(
      captureConsent(f.p.rt, a.app, notice, input({ granted: ['analytics'] })),
    ).rejects.toMatchObject({
      code: 'SVC_VALIDATION_FAILED',
      errors: [{ path: '/purposes', message: expect.stringContaining('essential') }],
    });
    await expect(
      captureConsent(f.p.rt, a.app, notice, input({ granted: ['essential', 'x'] })),
    ).rejects.toMatchObject({
      code: 'SVC_VALIDATION_FAILED',
    });
    expect((await f.itemsOf(a.app.appId)).all).toHaveLength(before.all.length);
    // A later capture's events arrive; every event since the refusals belongs to a principal
    // that is stored (earlier tests' events may still be arriving), so none came from the
    // refused captures, which stored nothing.
    const ok = await captureConsent(f.p.rt, a.app, notice, input());
    await f.waitForEvents(ok.referenceId, 2);
    const stored = new Set((await f.itemsOf(a.app.appId)).all.map((i) => i.referenceId));
    const since = f.messages
      .slice(count)
      .map((m) => (m.value as { data: { referenceId: string } }).data.referenceId);
    expect(since).toContain(ok.referenceId);
    expect(since.filter((ref) => !stored.has(ref))).toEqual([]);
  });

  it('a returning visitor’s capture joins the known principal; an unknown referenceId is 404', async () => {
    const first = await captureConsent(f.p.rt, a.app, notice, input());
    const second = await captureConsent(
      f.p.rt,
      a.app,
      notice,
      input({ referenceId: first.referenceId }),
    );
    expect(second.referenceId).toBe(first.referenceId);
    expect(second.transactionId).not.toBe(first.transactionId);
    await expect(
      captureConsent(f.p.rt, a.app, notice, input({ referenceId: 'SVC-REF-00000000' })),
    ).rejects.toMatchObject({ code: 'SVC_NOT_FOUND' });
  });

  it('getTransaction: undefined for unknown ids and for another app’s ids', async () => {
    const c = await captureConsent(f.p.rt, a.app, notice, input());
    const other = await f.createApp();
    expect(await getTransaction(f.p.rt, other.app.appId, c.transactionId)).toBeUndefined();
    expect(
      await getTransaction(f.p.rt, a.app.appId, '01890000-0000-7000-8000-000000000000'),
    ).toBeUndefined();
    expect(await getTransaction(f.p.rt, a.app.appId, 'x')).toBeUndefined();
  });
});
