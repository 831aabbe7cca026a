import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { breachMailId } from '../../shared/storage/duties/notifications.js';
import type { PortalApp, PortalStack } from '../portal/fixture.js';
import { startDutyStack, type DutyStack } from './fixture.js';

/**
 * The breach workflow end to end on the real stack: recorded through the admin API with its
 * affected principals, each e-mailed once through the notifier and a real SMTP server with the
 * five contents the Rules require, the 72-hour report to the Board escalated by the timers
 * worker on a sandbox app's compressed clock, and breaches in the ledger export.
 */

let d: DutyStack;
let s: PortalStack;
let shop: PortalApp;
let other: PortalApp;
/** A sandbox app whose clock runs SCALE times faster (the Board-report test). */
let timed: PortalApp;
const SCALE = 100_000; // 72 hours last 2.6 s

beforeAll(async () => {
  d = await startDutyStack('breaches');
  s = d.s;
  shop = await s.createApp();
  other = await s.createApp({ name: 'Other Ltd' });
  timed = await s.createApp({ name: 'Fast Clock', slaTimeScale: SCALE });
});

afterAll(async () => {
  await d?.close();
});

const WAIT = { timeout: 30_000, interval: 50 };

const call = (...a: Parameters<DutyStack['call']>) => d.call(...a);

const admin = () => d.admin();
const breachesOf = (t: PortalApp) => `/api/v1/admin/apps/${t.app.appId}/breaches`;

const mailsTo = (address: string) => d.mailsTo(address, /personal data breach/);

const contents = {
  description:
    'On 2 January a backup of the orders database was readable from the internet for six hours.',
  consequences: 'Your name, address and order history may be known to others.',
  mitigations: 'The backup was removed, access keys were rotated and access logs reviewed.',
  steps: 'Be wary of messages that quote your orders and ask for payment details.',
  contact: {
    name: 'Priya Rao, Data Protection Officer',
    email: 'breach@shop.example',
    phone: '+91 80 1234 5678',
  },
};

/** A principal with its userId (the record API's own id for it). */
async function principal(t: PortalApp, email: string) {
  const p = await s.createPrincipal(t, email);
  const tx = await call(
    'GET',
    `/api/public/consents/my-transactions/${p.transaction.transactionId}`,
    {
      'x-secret-key': t.secretKey,
    },
  );
  return { ...p, userId: tx.body.userId as string, email };
}

describe('recording a breach', () => {
  it('e-mails each affected principal once, with the five contents, named by userId or referenceId', async () => {
    const a = await principal(shop, 'ana@example.test');
    const b = await principal(shop, 'ben@example.test');
    const c = await principal(shop, 'cy@example.test');
    const r = await call('POST', breachesOf(shop), admin(), {
      ...contents,
      detectedAt: new Date(Date.now() - 3_600_000).toISOString(),
      principals: [
        { userId: a.userId },
        { referenceId: b.referenceId },
        { userId: c.userId, referenceId: c.referenceId },
        // The same person named twice is one affected principal.
        { referenceId: a.referenceId },
      ],
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body).toMatchObject({
      affectedCount: 3,
      batches: 1,
      complianceFlag: null,
      ...contents,
    });
    const breachId = r.body.breachId as string;
    expect(breachId).toMatch(/^brc_/);

    for (const p of [a, b, c]) {
      const m = await vi.waitFor(() => {
        const got = mailsTo(p.email);
        expect(got).toHaveLength(1);
        return got[0]!;
      }, WAIT);
      expect(m.subject).toBe('Important: a personal data breach at Shop & Co');
      expect(m.text).toContain(`What happened: ${contents.description}`);
      expect(m.text).toContain(`Likely consequences for you: ${contents.consequences}`);
      expect(m.text).toContain(`reduce the risk: ${contents.mitigations}`);
      expect(m.text).toContain(`What you can do to protect yourself: ${contents.steps}`);
      expect(m.text).toContain(
        'Whom to contact about this breach: Priya Rao, Data Protection Officer, breach@shop.example, +91 80 1234 5678.',
      );
      expect(m.text).toContain(p.referenceId);
      expect(m.messageId).toBe(`<${breachMailId(breachId, p.referenceId)}@svc.test>`);
    }

    // The notification delivered again (a retry, a redrive): nobody is mailed twice.
    await s.p.rt.producer.send([
      {
        topic: s.p.rt.topics.notifications,
        key: shop.app.appId,
        value: JSON.stringify({
          id: 'ntf_redelivered',
          type: 'breach.notify',
          appId: shop.app.appId,
          breachId,
          batch: 0,
        }),
      },
    ]);
    const dupes = () =>
      d.metric('svc_notifier_emails_total', { kind: 'breach_notice', outcome: 'duplicate' });
    await vi.waitFor(async () => expect(await dupes()).toBe(3), WAIT);
    for (const p of [a, b, c]) expect(mailsTo(p.email)).toHaveLength(1);
  }, 60_000);

  it('takes long lists in batches of 100, and more principals later', async () => {
    const people: Awaited<ReturnType<typeof principal>>[] = [];
    // Created 15 at a time: the point is the breach, not the record API's latency.
    for (let i = 0; i < 105; i += 15)
      people.push(
        ...(await Promise.all(
          Array.from({ length: 15 }, (_, j) => principal(shop, `bulk${i + j}@example.test`)),
        )),
      );
    const r = await call('POST', breachesOf(shop), admin(), {
      ...contents,
      detectedAt: new Date().toISOString(),
      principals: people.slice(0, 101).map((p) => ({ referenceId: p.referenceId })),
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body).toMatchObject({ affectedCount: 101, batches: 2 });
    const more = await call(
      'POST',
      `${breachesOf(shop)}/${r.body.breachId as string}/principals`,
      admin(),
      {
        principals: people.slice(100).map((p) => ({ userId: p.userId })),
      },
    );
    expect(more.status, JSON.stringify(more.body)).toBe(200);
    expect(more.body).toMatchObject({ affectedCount: 106, batches: 3 });
    // 105 people, one of them named in both requests: one e-mail each.
    await vi.waitFor(
      () => {
        for (const p of people) expect(mailsTo(p.email), p.email).toHaveLength(1);
      },
      { timeout: 60_000, interval: 200 },
    );
  }, 180_000);

  it('refuses principals not of the app, bad bodies, future detection and anonymous callers', async () => {
    const mine = await principal(shop, 'dee@example.test');
    const theirs = await principal(other, 'eve@example.test');
    const base = { ...contents, detectedAt: new Date().toISOString() };
    const foreign = await call('POST', breachesOf(shop), admin(), {
      ...base,
      principals: [
        { referenceId: mine.referenceId },
        { referenceId: theirs.referenceId },
        { userId: theirs.userId },
      ],
    });
    expect(foreign.status).toBe(422);
    expect(foreign.body.code).toBe('SVC_VALIDATION_FAILED');
    expect(foreign.body.errors).toEqual([
      {
        path: '/principals/1/referenceId',
        message: 'no principal of this app has this referenceId',
      },
      { path: '/principals/2/userId', message: 'no principal of this app has this userId' },
    ]);
    const mismatch = await call('POST', breachesOf(shop), admin(), {
      ...base,
      principals: [{ userId: mine.userId, referenceId: 'SVC-REF-00000000' }],
    });
    expect(mismatch.status).toBe(422);
    expect(mismatch.body.errors[0].path).toBe('/principals/0/referenceId');

    const missing = await call('POST', breachesOf(shop), admin(), {
      description: 'x',
      detectedAt: base.detectedAt,
    });
    expect(missing.status).toBe(422);
    expect(missing.body.errors.map((e: { path: string }) => e.path)).toEqual(
      expect.arrayContaining(['/consequences', '/mitigations', '/steps', '/contact']),
    );
    const future = await call('POST', breachesOf(shop), admin(), {
      ...base,
      detectedAt: new Date(Date.now() + 3_600_000).toISOString(),
    });
    expect(future.status).toBe(422);
    expect(future.body.errors).toEqual([
      { path: '/detectedAt', message: 'must not be in the future' },
    ]);
    const tooMany = await call('POST', breachesOf(shop), admin(), {
      ...base,
      principals: Array.from({ length: 1001 }, () => ({ referenceId: mine.referenceId })),
    });
    expect(tooMany.status).toBe(422);
    const anonymous = await call('POST', breachesOf(shop), {}, base);
    expect(anonymous.status).toBe(401);
    expect((await call('GET', breachesOf(shop), {})).status).toBe(401);

    // A breach of one app is unknown under another.
    const ok = await call('POST', breachesOf(shop), admin(), base);
    expect(ok.status).toBe(201);
    const id = ok.body.breachId as string;
    expect((await call('GET', `${breachesOf(other)}/${id}`, admin())).status).toBe(404);
    expect(
      (await call('POST', `${breachesOf(other)}/${id}/board-report`, admin(), {})).status,
    ).toBe(404);
  });
});

describe('the 72-hour report to the Board (sandbox time compression)', () => {
  it('a late report goes at_risk, then breach, and stays breach once filed; an early one is ok', async () => {
    const late = await call('POST', breachesOf(timed), admin(), {
      ...contents,
      detectedAt: new Date().toISOString(),
    });
    expect(late.status).toBe(201);
    const b = late.body;
    expect(Date.parse(b.boardReport.dueAt) - Date.parse(b.detectedAt)).toBe(
      Math.floor((72 * 3_600_000) / SCALE),
    );
    const read = async () =>
      (await call('GET', `${breachesOf(timed)}/${b.breachId as string}`, admin())).body;

    d.skewTo(Date.parse(b.boardReport.atRiskAt) + 20);
    await vi.waitFor(async () => expect((await read()).complianceFlag).toBe('at_risk'), WAIT);
    d.skewTo(Date.parse(b.boardReport.dueAt) + 20);
    await vi.waitFor(async () => expect((await read()).complianceFlag).toBe('breach'), WAIT);
    await vi.waitFor(
      async () => expect(await d.metric('svc_board_reports_pending', { flag: 'breach' })).toBe(1),
      WAIT,
    );

    // Filed after the deadline by the wall clock too, which the API goes by.
    await vi.waitFor(
      () => expect(Date.now()).toBeGreaterThan(Date.parse(b.boardReport.dueAt)),
      WAIT,
    );
    const filed = await call(
      'POST',
      `${breachesOf(timed)}/${b.breachId as string}/board-report`,
      admin(),
      {
        reference: 'DPB/2030/0042',
      },
    );
    expect(filed.status, JSON.stringify(filed.body)).toBe(200);
    expect(filed.body.complianceFlag).toBe('breach');
    expect(filed.body.boardReport).toMatchObject({ reference: 'DPB/2030/0042' });
    // Filed late: the breach it already carried stands, no new change.
    expect(
      filed.body.flagHistory.map((f: { flag: string; cause: string }) => [f.flag, f.cause]),
    ).toEqual([
      ['at_risk', 'near_deadline'],
      ['breach', 'deadline_passed'],
    ]);
    const twice = await call(
      'POST',
      `${breachesOf(timed)}/${b.breachId as string}/board-report`,
      admin(),
      {},
    );
    expect(twice.status).toBe(409);

    // On a normal clock, filed at once: within the 72 hours.
    const early = await call('POST', breachesOf(shop), admin(), {
      ...contents,
      detectedAt: new Date().toISOString(),
    });
    const onTime = await call(
      'POST',
      `${breachesOf(shop)}/${early.body.breachId as string}/board-report`,
      admin(),
      {},
    );
    expect(onTime.body).toMatchObject({ complianceFlag: 'ok' });

    for (const flag of ['at_risk', 'breach', 'ok'])
      expect(await d.metric('svc_board_report_flags_total', { flag }), flag).toBeGreaterThanOrEqual(
        1,
      );
  }, 60_000);

  it('breaches appear in the ledger export and the ledger API, for their own app only', async () => {
    const p = await principal(shop, 'fay@example.test');
    const r = await call('POST', breachesOf(shop), admin(), {
      ...contents,
      detectedAt: new Date().toISOString(),
      principals: [{ referenceId: p.referenceId }],
    });
    const id = r.body.breachId as string;
    const key = await s.admin('POST', `/apps/${shop.app.appId}/api-keys`, {
      name: 'auditor',
      scopes: ['ledger:read'],
    });
    const auditor = { authorization: `Bearer ${key.key as string}` };
    const from = new Date(Date.now() - 3_600_000).toISOString();
    const to = new Date(Date.now() + 60_000).toISOString();
    const exp = await fetch(`${s.url}/api/v1/ledger/export?from=${from}&to=${to}`, {
      headers: auditor,
    });
    expect(exp.status).toBe(200);
    const lines = (await exp.text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const line = lines.find((l) => l.type === 'breach' && l.breachId === id);
    expect(line).toMatchObject({
      ...contents,
      affectedCount: 1,
      affected: [{ referenceId: p.referenceId, userId: p.userId }],
    });
    expect(lines.at(-1)).toMatchObject({
      type: 'summary',
      breaches: lines.filter((l) => l.type === 'breach').length,
      count: lines.filter((l) => l.type === 'dispatch').length,
    });
    const one = await call('GET', `/api/v1/ledger/breaches/${id}`, auditor);
    expect(one.status).toBe(200);
    expect(one.body.affected).toEqual([{ referenceId: p.referenceId, userId: p.userId }]);

    const otherKey = await s.admin('POST', `/apps/${other.app.appId}/api-keys`, {
      name: 'auditor',
      scopes: ['ledger:read'],
    });
    const otherAuditor = { authorization: `Bearer ${otherKey.key as string}` };
    expect((await call('GET', `/api/v1/ledger/breaches/${id}`, otherAuditor)).status).toBe(404);
    const theirs = await call('GET', '/api/v1/ledger/breaches', otherAuditor);
    expect(theirs.body.items).toEqual([]);
  });
});
