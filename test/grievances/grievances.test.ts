import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { addresses } from '../mail/smtp.js';
import type { PortalApp, PortalStack } from '../portal/fixture.js';
import { startDutyStack, type DutyStack } from './fixture.js';

/**
 * Grievances end to end on the real stack: filed by the principal (public API as the dashboard
 * calls it, hosted portal API) or by the app (record API key), answered by the app, e-mailed
 * through the notifier to a real SMTP server, escalated by the timers worker on a sandbox app's
 * compressed clock, and shown to auditors in the ledger API and export.
 */

let d: DutyStack;
let s: PortalStack;
let shop: PortalApp;
let other: PortalApp;
const SCALE = 20_000; // a 1-day window lasts 4.32 s; 90 days 6.5 min

beforeAll(async () => {
  d = await startDutyStack('grievances');
  s = d.s;
  shop = await s.createApp({ slaTimeScale: SCALE });
  other = await s.createApp({ name: 'Other Ltd' });
});

afterAll(async () => {
  await d?.close();
});

const WAIT = { timeout: 20_000, interval: 50 };

const call = (...a: Parameters<DutyStack['call']>) => d.call(...a);

const apiKey = (t: PortalApp) => ({ authorization: `Bearer ${t.key}` });

/** What the dashboard sends: the site key from an allowlisted origin and a principal token. */
async function browserAuth(t: PortalApp, referenceId: string) {
  const minted = await call(
    'POST',
    '/api/public/consents/principal-tokens',
    { 'x-secret-key': t.secretKey },
    { referenceId },
  );
  expect(minted.status).toBe(201);
  return {
    'x-site-key': t.app.siteKey,
    origin: 'https://shop.example',
    authorization: `Bearer ${minted.body.token as string}`,
  };
}

const mailsTo = (address: string, subject: RegExp) => d.mailsTo(address, subject);

const waitForMail = (address: string, subject: RegExp) =>
  vi.waitFor(() => {
    const m = mailsTo(address, subject)[0];
    expect(m, `a mail to ${address} matching ${subject}`).toBeDefined();
    return m!;
  }, WAIT);

const metric = (name: string, labels: Record<string, string>) => d.metric(name, labels);

describe('filing a grievance', () => {
  it('from the dashboard (public API, principal token): 201, e-mailed, listed for the principal', async () => {
    const alice = await s.createPrincipal(shop, 'alice@example.test');
    const auth = await browserAuth(shop, alice.referenceId);
    const r = await call('POST', '/api/public/consents/my-grievances', auth, {
      subject: 'Marketing e-mails after I withdrew',
      description: 'I withdrew marketing consent but still get offers.',
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body).toMatchObject({
      referenceId: alice.referenceId,
      filedVia: 'dashboard',
      status: 'open',
      answer: null,
    });
    // The principal's view carries no compliance flags.
    expect(r.body).not.toHaveProperty('complianceFlag');
    const id = r.body.grievanceId as string;
    expect(id).toMatch(/^grv_/);

    const m = await waitForMail('alice@example.test', /has received your grievance/);
    expect(m.subject).toBe('Shop & Co has received your grievance');
    expect(m.text).toContain(id);
    expect(m.text).toContain('Marketing e-mails after I withdrew');
    expect(addresses(m.replyTo)).toEqual(['dpo@shop.example']);

    const mine = await call(
      'GET',
      `/api/public/consents/my-grievances?referenceId=${alice.referenceId}`,
      auth,
    );
    expect(mine.status).toBe(200);
    expect(mine.body.items.map((g: { grievanceId: string }) => g.grievanceId)).toEqual([id]);
  });

  it('from the hosted portal (portal token): 201, filed via portal', async () => {
    const bob = await s.createPrincipal(shop, 'bob@example.test');
    const token = s.tokenFor(shop.app.appId, bob.referenceId);
    const r = await call(
      'POST',
      `/portal/api/${bob.referenceId}/grievances`,
      { authorization: `Portal ${token}` },
      { subject: 'Wrong address on file', description: 'Please correct my address.' },
    );
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body).toMatchObject({ referenceId: bob.referenceId, filedVia: 'portal' });
    const list = await call('GET', `/portal/api/${bob.referenceId}/grievances`, {
      authorization: `Portal ${token}`,
    });
    expect(list.body.items).toHaveLength(1);
    await waitForMail('bob@example.test', /has received your grievance/);
  });

  it('by the app for a principal named by userId (record API key)', async () => {
    const carol = await s.createPrincipal(shop, 'carol@example.test');
    const rec = await call(
      'GET',
      `/api/public/consents/my-transactions/${carol.transaction.transactionId}`,
      {
        'x-secret-key': shop.secretKey,
      },
    );
    const userId = rec.body.userId as string;
    const r = await call('POST', '/api/v1/grievances', apiKey(shop), {
      userId,
      subject: 'Called in by phone',
      description: 'The principal phoned our support line.',
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body).toMatchObject({
      referenceId: carol.referenceId,
      filedVia: 'api',
      complianceFlag: null,
    });
    expect(r.body.responseDays).toBe(90);
    await waitForMail('carol@example.test', /has received your grievance/);
  });
});

describe('Idempotency-Key per caller', () => {
  it('principal B replaying principal A’s key files its own grievance, never gets A’s', async () => {
    const ann = await s.createPrincipal(shop, 'ann-idem@example.test');
    const bob = await s.createPrincipal(shop, 'bob-idem@example.test');
    const key = { 'idempotency-key': `idem-${ann.referenceId}` };
    const body = { subject: 'Same words', description: 'Typed by whoever holds the key.' };
    const a = await call(
      'POST',
      '/api/public/consents/my-grievances',
      {
        ...(await browserAuth(shop, ann.referenceId)),
        ...key,
      },
      body,
    );
    expect(a.status).toBe(201);
    const b = await call(
      'POST',
      '/api/public/consents/my-grievances',
      {
        ...(await browserAuth(shop, bob.referenceId)),
        ...key,
      },
      body,
    );
    expect(b.status).toBe(201);
    expect(b.headers['idempotent-replayed']).toBeUndefined();
    expect(b.body.grievanceId).not.toBe(a.body.grievanceId);
    expect(b.body.referenceId).toBe(bob.referenceId);
    // A's own repeat is still a replay of A's answer.
    const again = await call(
      'POST',
      '/api/public/consents/my-grievances',
      {
        ...(await browserAuth(shop, ann.referenceId)),
        ...key,
      },
      body,
    );
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body.grievanceId).toBe(a.body.grievanceId);
  });

  it('a write-only key cannot replay a read-write key’s record', async () => {
    const eve = await s.createPrincipal(shop, 'eve-idem@example.test');
    const made = await s.admin('POST', `/apps/${shop.app.appId}/api-keys`, {
      name: 'write only (idempotency)',
      scopes: ['consents:write'],
    });
    const writer = { authorization: `Bearer ${made.key as string}` };
    const key = { 'idempotency-key': `idem-${eve.referenceId}` };
    const body = {
      referenceId: eve.referenceId,
      subject: 'Private to readers',
      description: 'Only a key that may read sees this text.',
    };
    const full = await call('POST', '/api/v1/grievances', { ...apiKey(shop), ...key }, body);
    expect(full.status).toBe(201);
    expect(full.body.subject).toBe('Private to readers');
    const replay = await call('POST', '/api/v1/grievances', { ...writer, ...key }, body);
    expect(replay.status).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBeUndefined();
    expect(replay.body.grievanceId).not.toBe(full.body.grievanceId);
    expect(JSON.stringify(replay.body)).not.toContain('Private to readers');
  });
});

describe('answering', () => {
  it('a write-only key files and answers with a receipt, never the text a principal wrote', async () => {
    const dave = await s.createPrincipal(shop, 'dave@example.test');
    const made = await s.admin('POST', `/apps/${shop.app.appId}/api-keys`, {
      name: 'write only',
      scopes: ['consents:write'],
    });
    const writer = { authorization: `Bearer ${made.key as string}` };
    const filed = await call('POST', '/api/v1/grievances', apiKey(shop), {
      referenceId: dave.referenceId,
      subject: 'A private matter',
      description: 'Text only the principal and readers of this app may see.',
    });
    expect(filed.status).toBe(201);
    const id = filed.body.grievanceId as string;

    const answered = await call('POST', `/api/v1/grievances/${id}/answer`, writer, {
      answer: 'Resolved by phone.',
      resolution: 'resolved',
    });
    expect(answered.status, JSON.stringify(answered.body)).toBe(200);
    expect(Object.keys(answered.body).sort()).toEqual(
      [
        'answeredAt',
        'createdAt',
        'dueAt',
        'grievanceId',
        'referenceId',
        'resolution',
        'status',
      ].sort(),
    );
    expect(answered.body).toMatchObject({ grievanceId: id, status: 'answered' });
    expect(JSON.stringify(answered.body)).not.toContain('private matter');

    const own = await call('POST', '/api/v1/grievances', writer, {
      referenceId: dave.referenceId,
      subject: 'Filed by the write-only key',
      description: 'Its answer is a receipt too.',
    });
    expect(own.status).toBe(201);
    expect(own.body.subject).toBeUndefined();
    expect(own.body.description).toBeUndefined();
    // A key that may read still gets the whole grievance.
    const read = await call('GET', `/api/v1/grievances/${id}`, apiKey(shop));
    expect(read.body).toMatchObject({ subject: 'A private matter', answer: 'Resolved by phone.' });
  });

  it('the app lists, reads and answers; the principal is e-mailed the answer and sees it', async () => {
    const dan = await s.createPrincipal(shop, 'dan@example.test');
    const auth = await browserAuth(shop, dan.referenceId);
    const filed = await call('POST', '/api/public/consents/my-grievances', auth, {
      subject: 'Delete my order history',
      description: 'I asked twice.',
    });
    const id = filed.body.grievanceId as string;

    const listed = await call('GET', '/api/v1/grievances?status=open&limit=100', apiKey(shop));
    expect(listed.status).toBe(200);
    expect(listed.body.items.map((g: { grievanceId: string }) => g.grievanceId)).toContain(id);

    const answered = await call('POST', `/api/v1/grievances/${id}/answer`, apiKey(shop), {
      answer: 'Your order history was deleted on 3 March.',
    });
    expect(answered.status, JSON.stringify(answered.body)).toBe(200);
    expect(answered.body).toMatchObject({
      status: 'answered',
      resolution: 'resolved',
      answer: 'Your order history was deleted on 3 March.',
      complianceFlag: 'ok',
    });
    expect(answered.body.flagHistory).toEqual([
      expect.objectContaining({ flag: 'ok', cause: 'done_on_time' }),
    ]);

    const m = await waitForMail('dan@example.test', /has answered your grievance/);
    expect(m.text).toContain('Your order history was deleted on 3 March.');
    expect(m.text).toContain(id);

    const seen = await call('GET', `/api/public/consents/my-grievances/${id}`, auth);
    expect(seen.status).toBe(200);
    expect(seen.body).toMatchObject({
      status: 'answered',
      answer: 'Your order history was deleted on 3 March.',
    });

    const again = await call('POST', `/api/v1/grievances/${id}/answer`, apiKey(shop), {
      answer: 'Second thoughts',
    });
    expect(again.status).toBe(409);
    // One e-mail per notification, however the topic is delivered.
    expect(mailsTo('dan@example.test', /has answered your grievance/)).toHaveLength(1);
  });
});

describe('isolation and refusals', () => {
  it('another app’s key neither sees nor answers; a token for another principal or app is refused; anonymous is 401', async () => {
    const erin = await s.createPrincipal(shop, 'erin@example.test');
    const frank = await s.createPrincipal(shop, 'frank@example.test');
    const erinAuth = await browserAuth(shop, erin.referenceId);
    const filed = await call('POST', '/api/public/consents/my-grievances', erinAuth, {
      subject: 'Private',
      description: 'Erin’s complaint.',
    });
    const id = filed.body.grievanceId as string;

    expect((await call('GET', `/api/v1/grievances/${id}`, apiKey(other))).status).toBe(404);
    const answer = await call('POST', `/api/v1/grievances/${id}/answer`, apiKey(other), {
      answer: 'Not yours',
    });
    expect(answer.status).toBe(404);
    const otherList = await call('GET', '/api/v1/grievances?limit=100', apiKey(other));
    expect(otherList.body.items).toEqual([]);
    // Another app filing for this app's principal: unknown to it.
    const foreign = await call('POST', '/api/v1/grievances', apiKey(other), {
      referenceId: erin.referenceId,
      subject: 'x',
      description: 'y',
    });
    expect(foreign.status).toBe(404);

    // Frank's token cannot read Erin's grievance, nor list hers.
    const frankAuth = await browserAuth(shop, frank.referenceId);
    expect((await call('GET', `/api/public/consents/my-grievances/${id}`, frankAuth)).status).toBe(
      404,
    );
    expect(
      (
        await call(
          'GET',
          `/api/public/consents/my-grievances?referenceId=${erin.referenceId}`,
          frankAuth,
        )
      ).status,
    ).toBe(403);
    // Erin's portal link cannot act for Frank.
    const erinPortal = s.tokenFor(shop.app.appId, erin.referenceId);
    expect(
      (
        await call('GET', `/portal/api/${frank.referenceId}/grievances`, {
          authorization: `Portal ${erinPortal}`,
        })
      ).status,
    ).toBe(403);

    for (const [method, path, body] of [
      ['GET', '/api/v1/grievances', undefined],
      ['GET', `/api/v1/grievances/${id}`, undefined],
      ['POST', `/api/v1/grievances/${id}/answer`, { answer: 'x' }],
      [
        'POST',
        '/api/v1/grievances',
        { referenceId: erin.referenceId, subject: 'x', description: 'y' },
      ],
      ['GET', `/api/public/consents/my-grievances?referenceId=${erin.referenceId}`, undefined],
      [
        'POST',
        '/api/public/consents/my-grievances',
        { referenceId: erin.referenceId, subject: 'x', description: 'y' },
      ],
      ['GET', `/portal/api/${erin.referenceId}/grievances`, undefined],
      ['GET', '/api/v1/ledger/grievances', undefined],
    ] as const)
      expect((await call(method, path, {}, body)).status, `${method} ${path}`).toBe(401);
    // A browser call with the site key but no principal token names nobody.
    const noToken = await call(
      'POST',
      '/api/public/consents/my-grievances',
      { 'x-site-key': shop.app.siteKey, origin: 'https://shop.example' },
      { subject: 'x', description: 'y' },
    );
    expect(noToken.status).toBe(401);
  });

  it('refuses invalid bodies (422), unknown ids (404) and a window beyond 90 days (400)', async () => {
    const gina = await s.createPrincipal(shop, 'gina@example.test');
    const auth = await browserAuth(shop, gina.referenceId);
    const blank = await call('POST', '/api/public/consents/my-grievances', auth, {
      subject: '   ',
      description: 'x',
    });
    expect(blank.status).toBe(422);
    expect(blank.body.code).toBe('SVC_VALIDATION_FAILED');
    expect(blank.body.errors).toEqual([expect.objectContaining({ path: '/subject' })]);
    const extra = await call('POST', '/api/public/consents/my-grievances', auth, {
      subject: 'a',
      description: 'b',
      status: 'answered',
    });
    expect(extra.status).toBe(422);
    const both = await call('POST', '/api/v1/grievances', apiKey(shop), {
      subject: 'a',
      description: 'b',
    });
    expect(both.status).toBe(422);
    expect(both.body.errors[0].path).toBe('/referenceId');
    const tooLong = await call('POST', '/api/v1/grievances', apiKey(shop), {
      referenceId: gina.referenceId,
      subject: 'a'.repeat(201),
      description: 'b',
    });
    expect(tooLong.status).toBe(422);
    expect((await call('GET', '/api/v1/grievances/grv_nope', apiKey(shop))).status).toBe(404);
    const reversed = await call(
      'GET',
      '/api/v1/grievances?from=2030-01-02T00:00:00Z&to=2030-01-01T00:00:00Z',
      apiKey(shop),
    );
    expect(reversed.status).toBe(422);
    expect(reversed.body.errors).toEqual([{ path: '/to', message: 'must be after from' }]);
    expect(
      (
        await call(
          'POST',
          '/api/v1/grievances/grv_01ARZ3NDEKTSV4RRFFQ69G5FAV/answer',
          apiKey(shop),
          { answer: 'x' },
        )
      ).status,
    ).toBe(404);
    const blankAnswer = await call(
      'POST',
      '/api/v1/grievances/grv_01ARZ3NDEKTSV4RRFFQ69G5FAV/answer',
      apiKey(shop),
      {
        answer: '',
      },
    );
    expect(blankAnswer.status).toBe(422);

    const settings = `/apps/${other.app.appId}/grievance-settings`;
    expect(await s.admin('GET', settings)).toMatchObject({ responseDays: 90, maxResponseDays: 90 });
    const admin = d.admin();
    const longer = await call('PUT', `/api/v1/admin${settings}`, admin, { responseDays: 91 });
    expect(longer.status).toBe(400);
    expect(longer.body).toMatchObject({ code: 'SVC_LEGAL_LIMIT' });
    expect(longer.body.errors).toEqual([{ path: '/responseDays', message: 'must be at most 90' }]);
    expect((await call('PUT', `/api/v1/admin${settings}`, admin, { responseDays: 0 })).status).toBe(
      422,
    );
    expect(
      (await call('PUT', `/api/v1/admin${settings}`, admin, { responseDays: 2.5 })).status,
    ).toBe(422);
    expect((await call('PUT', `/api/v1/admin${settings}`, {}, { responseDays: 30 })).status).toBe(
      401,
    );
    expect(await s.admin('PUT', settings, { responseDays: 30 })).toMatchObject({
      responseDays: 30,
    });

    // A shorter window applies to grievances filed from then on.
    const hank = await s.createPrincipal(other, 'hank@example.test');
    const g = await call('POST', '/api/v1/grievances', apiKey(other), {
      referenceId: hank.referenceId,
      subject: 'Slow',
      description: 'x',
    });
    expect(g.status).toBe(201);
    expect(g.body.responseDays).toBe(30);
    expect(Date.parse(g.body.dueAt) - Date.parse(g.body.createdAt)).toBe(30 * 86_400_000);
  });
});

describe('the response deadline (sandbox time compression)', () => {
  it('flags an unanswered grievance at_risk, then breach; a late answer keeps breach; ledger, metrics and gauges show it', async () => {
    await s.admin('PUT', `/apps/${shop.app.appId}/grievance-settings`, { responseDays: 1 });
    const ivy = await s.createPrincipal(shop, 'ivy@example.test');
    const filed = await call('POST', '/api/v1/grievances', apiKey(shop), {
      referenceId: ivy.referenceId,
      subject: 'Nobody answers',
      description: 'x',
    });
    expect(filed.status).toBe(201);
    const g = filed.body;
    // One day divided by the app's time scale.
    expect(Date.parse(g.dueAt) - Date.parse(g.createdAt)).toBe(Math.floor(86_400_000 / SCALE));
    const read = () => call('GET', `/api/v1/grievances/${g.grievanceId}`, apiKey(shop));

    // The timers worker's clock reaches the at-risk mark, then passes the deadline.
    d.skewTo(Date.parse(g.atRiskAt) + 20);
    await vi.waitFor(async () => expect((await read()).body.complianceFlag).toBe('at_risk'), WAIT);
    d.skewTo(Date.parse(g.dueAt) + 20);
    await vi.waitFor(async () => expect((await read()).body.complianceFlag).toBe('breach'), WAIT);
    const flagged = (await read()).body;
    expect(
      flagged.flagHistory.map((f: { flag: string; cause: string }) => [f.flag, f.cause]),
    ).toEqual([
      ['at_risk', 'near_deadline'],
      ['breach', 'deadline_passed'],
    ]);

    expect(await metric('svc_grievance_flags_total', { flag: 'at_risk' })).toBeGreaterThanOrEqual(
      1,
    );
    expect(await metric('svc_grievance_flags_total', { flag: 'breach' })).toBeGreaterThanOrEqual(1);
    await vi.waitFor(
      async () => expect(await metric('svc_grievances_open', { flag: 'breach' })).toBe(1),
      WAIT,
    );

    // Auditors see it in the ledger API, filtered by flag, and in the export.
    const ledgerKey = await s.admin('POST', `/apps/${shop.app.appId}/api-keys`, {
      name: 'auditor',
      scopes: ['ledger:read'],
    });
    const auditor = { authorization: `Bearer ${ledgerKey.key as string}` };
    const breached = await call('GET', '/api/v1/ledger/grievances?flag=breach', auditor);
    expect(breached.status).toBe(200);
    expect(breached.body.items.map((x: { grievanceId: string }) => x.grievanceId)).toEqual([
      g.grievanceId,
    ]);
    const from = new Date(Date.parse(g.createdAt) - 60_000).toISOString();
    const to = new Date(Date.now() + 60_000).toISOString();
    const exp = await fetch(`${s.url}/api/v1/ledger/export?from=${from}&to=${to}`, {
      headers: auditor,
    });
    expect(exp.status).toBe(200);
    const lines = (await exp.text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const grievanceLines = lines.filter((l) => l.type === 'grievance');
    expect(grievanceLines.map((l) => l.grievanceId)).toContain(g.grievanceId);
    expect(lines.at(-1)).toMatchObject({ type: 'summary', grievances: grievanceLines.length });
    // Another app's auditor sees none of it.
    const otherKey = await s.admin('POST', `/apps/${other.app.appId}/api-keys`, {
      name: 'auditor',
      scopes: ['ledger:read'],
    });
    const otherAuditor = { authorization: `Bearer ${otherKey.key as string}` };
    expect(
      (await call('GET', `/api/v1/ledger/grievances/${g.grievanceId}`, otherAuditor)).status,
    ).toBe(404);

    // Answered late (by the wall clock too, which the API goes by): the breach stands, and the
    // gauge no longer counts it as open.
    await vi.waitFor(() => expect(Date.now()).toBeGreaterThan(Date.parse(g.dueAt)), WAIT);
    const late = await call('POST', `/api/v1/grievances/${g.grievanceId}/answer`, apiKey(shop), {
      answer: 'Sorry for the delay.',
      resolution: 'resolved',
    });
    expect(late.status).toBe(200);
    expect(late.body.complianceFlag).toBe('breach');
    expect(late.body.flagHistory).toHaveLength(2);
    await vi.waitFor(
      async () => expect(await metric('svc_grievances_open', { flag: 'breach' })).toBe(0),
      WAIT,
    );
    await waitForMail('ivy@example.test', /has answered your grievance/);
  }, 60_000);
});
