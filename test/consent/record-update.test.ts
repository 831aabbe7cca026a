import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, startConsentProcess, type ConsentFixture, type TestApp } from './fixture.js';

let f: ConsentFixture;
let a: TestApp;
/** An app with a notice: only its purposes are allowed. */
let n: TestApp;

beforeAll(async () => {
  f = await startConsentProcess('consent-record-update');
  a = await f.createApp();
  n = await f.createApp({
    notice: {
      triggerKey: 'newsletter_signup',
      purposes: [
        { name: 'analytics' },
        { name: 'marketing' },
        { name: 'essential', required: true },
      ],
    },
  });
});
afterAll(async () => {
  await f?.close();
});

const uid = () => `user-${Math.random().toString(36).slice(2, 10)}@shop.example`;
const post = (t: TestApp, body: unknown, key = t.key) =>
  f.call('POST', '/api/v1/consents', { headers: bearer(key), body });
const get = (t: TestApp, userId: string, key = t.key) =>
  f.call('GET', `/api/v1/consents/${encodeURIComponent(userId)}`, { headers: bearer(key) });
const put = (t: TestApp, userId: string, body: unknown, key = t.key) =>
  f.call('PUT', `/api/v1/consents/${encodeURIComponent(userId)}`, { headers: bearer(key), body });
const del = (t: TestApp, userId: string, key = t.key) =>
  f.call('DELETE', `/api/v1/consents/${encodeURIComponent(userId)}`, { headers: bearer(key) });

describe('GET, PUT, DELETE /api/v1/consents/{userId}', () => {
  it('GET 200 with the record; 404 for an unknown or impossible userId', async () => {
    const userId = uid();
    const created = await post(a, {
      userId,
      email: 'g@shop.example',
      consents: { analytics: true },
    });
    const r = await get(a, userId, a.readOnlyKey);
    expect(r.status).toBe(200);
    expect(r.body).toEqual(created.body);
    expect((await get(a, uid())).status).toBe(404);
    expect((await get(a, 'a b')).status).toBe(404);
    expect((await f.call('GET', `/api/v1/consents/${uid()}`)).status).toBe(401);
  });

  it('PUT changes named purposes, keeps the rest, adds new ones, changes the e-mail; events follow', async () => {
    const userId = uid();
    const c = await post(a, {
      userId,
      email: 'p@shop.example',
      consents: { analytics: true, marketing: false, ads: true },
    });
    const r = await put(a, userId, {
      consents: { analytics: false, marketing: true, newsletter: true },
      email: 'new@shop.example',
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      email: 'new@shop.example',
      consents: { analytics: false, marketing: true, ads: true, newsletter: true },
      status: 'active',
      transactionId: c.body.transactionId,
      createdAt: c.body.createdAt,
    });
    expect(r.body.updatedAt > c.body.updatedAt).toBe(true);
    expect((await get(a, userId)).body).toEqual(r.body);

    const events = await f.waitForEvents(c.body.referenceId, 4);
    const [, , granted, withdrawn] = events;
    expect(events.map((e) => e.type)).toEqual([
      'consent.created',
      'consent.granted',
      'consent.granted',
      'consent.withdrawn',
    ]);
    expect(granted!.data.purposes).toEqual({ marketing: true, newsletter: true });
    expect(withdrawn!.data.purposes).toEqual({ analytics: false });
    expect(withdrawn!.data.postback).toEqual({
      required: true,
      dueAt: new Date(Date.parse(withdrawn!.createdAt) + 3_600_000).toISOString(),
      url: 'http://localhost:8080/api/v1/server/consent/action',
    });

    // Only the e-mail: 200, no event.
    const e = await put(a, userId, { email: 'newer@shop.example' });
    expect(e.status).toBe(200);
    expect(e.body.email).toBe('newer@shop.example');
    // Same again: nothing changes.
    const same = await put(a, userId, { consents: { marketing: true } });
    expect(same.body.consents).toEqual(e.body.consents);
  });

  it('PUT: 404 unknown user, 422 bad body, 422 undeclared purpose, 400 bad JSON', async () => {
    expect((await put(a, uid(), { consents: { analytics: true } })).status).toBe(404);
    const userId = uid();
    await post(a, { userId, email: 'q@shop.example', consents: { analytics: true } });
    const r = await put(a, userId, { consents: { analytics: 'no' }, email: 'x', other: 1 });
    expect(r.status).toBe(422);
    expect(r.body.errors.map((e: { path: string }) => e.path).sort()).toEqual([
      '/',
      '/consents/analytics',
      '/email',
    ]);
    const raw = await f.call('PUT', `/api/v1/consents/${userId}`, {
      headers: bearer(a.key),
      raw: '{',
    });
    expect(raw.status).toBe(400);

    const nu = uid();
    await post(n, { userId: nu, email: 'q@shop.example', consents: { analytics: true } });
    const und = await put(n, nu, { consents: { tracking: true } });
    expect(und.status).toBe(422);
    expect(und.body.errors).toEqual([{ path: '/consents/tracking', message: expect.any(String) }]);
    expect((await put(n, nu, {}, n.readOnlyKey)).status).toBe(403);
  });

  it('DELETE withdraws every purpose once; a repeat is 200 with the same state and no event', async () => {
    const userId = uid();
    const c = await post(a, {
      userId,
      email: 'w@shop.example',
      consents: { analytics: true, marketing: true, ads: false },
    });
    const r = await del(a, userId);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      consents: { analytics: false, marketing: false, ads: false },
      status: 'withdrawn',
    });
    const events = await f.waitForEvents(c.body.referenceId, 3);
    expect(events.map((e) => e.type)).toEqual([
      'consent.created',
      'consent.granted',
      'consent.withdrawn',
    ]);
    expect(events[2]!.data.purposes).toEqual({ analytics: false, marketing: false });
    expect(events[2]!.data.recordIds).toHaveLength(2);

    const again = await del(a, userId);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(r.body);
    // A later change for the same principal arrives after anything the repeat could have sent.
    await put(a, userId, { consents: { ads: true } });
    const later = await f.waitForEvents(c.body.referenceId, 4);
    expect(later.map((e) => e.type)).toEqual([
      'consent.created',
      'consent.granted',
      'consent.withdrawn',
      'consent.granted',
    ]);

    expect((await del(a, uid())).status).toBe(404);
    expect((await del(a, userId, a.readOnlyKey)).status).toBe(403);
  });

  it('a write-only key (no consents:read) gets a receipt, never the record: PUT {} and DELETE are no reads', async () => {
    const userId = uid();
    const email = 'private@shop.example';
    await post(a, { userId, email, consents: { analytics: true, marketing: false } });
    const isReceipt = (r: { status: number; body: Record<string, unknown> }, status = 200) => {
      expect(r.status).toBe(status);
      expect(Object.keys(r.body).sort()).toEqual([
        'referenceId',
        'transactionId',
        'updatedAt',
        'userId',
      ]);
      expect(JSON.stringify(r.body)).not.toContain(email);
    };
    isReceipt(await put(a, userId, {}, a.writeOnlyKey));
    isReceipt(await put(a, userId, { consents: { marketing: true } }, a.writeOnlyKey));
    isReceipt(await del(a, userId, a.writeOnlyKey));
    isReceipt(
      await post(
        a,
        { userId: uid(), email: 'new@shop.example', consents: { analytics: true } },
        a.writeOnlyKey,
      ),
      201,
    );
    // The writes did apply; a key that may read sees the record, from GET and from a write.
    expect((await get(a, userId)).body.consents).toEqual({ analytics: false, marketing: false });
    expect((await put(a, userId, {})).body).toMatchObject({
      email,
      consents: { analytics: false, marketing: false },
    });
  });

  it('concurrent PUTs on one record all apply (optimistic locking re-reads and re-applies)', async () => {
    const userId = uid();
    await post(a, {
      userId,
      email: 'cc@shop.example',
      consents: { p1: false, p2: false, p3: false, p4: false },
    });
    const rs = await Promise.all(
      ['p1', 'p2', 'p3', 'p4'].map((p) => put(a, userId, { consents: { [p]: true } })),
    );
    expect(rs.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect((await get(a, userId)).body.consents).toEqual({
      p1: true,
      p2: true,
      p3: true,
      p4: true,
    });
    const txn = (await f.itemsOf(a.app.appId))
      .kinds('transaction')
      .find((t) => t.userId === userId);
    expect(txn?.version).toBe(5);
  });

  it('Idempotency-Key replays the first answer without applying twice', async () => {
    const userId = uid();
    const body = { userId, email: 'i@shop.example', consents: { analytics: true } };
    const h = { ...bearer(a.key), 'idempotency-key': `k-${userId}` };
    const first = await f.call('POST', '/api/v1/consents', { headers: h, body });
    const second = await f.call('POST', '/api/v1/consents', { headers: h, body });
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(second.body).toEqual(first.body);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
  });
});
