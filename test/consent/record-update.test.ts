import { describe, expect, it } from 'vitest';
import { bearer, useRecordApi } from './fixture.js';

const { rec, uid, post, get, put, del } = useRecordApi('consent-record-update');

describe('GET, PUT, DELETE /api/v1/consents/{userId}', () => {
  it('GET 200 with the record; 404 for an unknown or impossible userId', async () => {
    const userId = uid();
    const created = await post(rec.a, {
      userId,
      email: 'g@shop.example',
      consents: { analytics: true },
    });
    const r = await get(rec.a, userId, rec.a.readOnlyKey);
    expect(r.status).toBe(200);
    expect(r.body).toEqual(created.body);
    expect((await get(rec.a, uid())).status).toBe(404);
    expect((await get(rec.a, 'a b')).status).toBe(404);
    expect((await rec.f.call('GET', `/api/v1/consents/${uid()}`)).status).toBe(401);
  });

  it('PUT changes named purposes, keeps the rest, adds new ones, changes the e-mail; events follow', async () => {
    const userId = uid();
    const c = await post(rec.a, {
      userId,
      email: 'p@shop.example',
      consents: { analytics: true, marketing: false, ads: true },
    });
    const r = await put(rec.a, userId, {
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
    expect((await get(rec.a, userId)).body).toEqual(r.body);

    const events = await rec.f.waitForEvents(c.body.referenceId, 4);
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
    const e = await put(rec.a, userId, { email: 'newer@shop.example' });
    expect(e.status).toBe(200);
    expect(e.body.email).toBe('newer@shop.example');
    // Same again: nothing changes.
    const same = await put(rec.a, userId, { consents: { marketing: true } });
    expect(same.body.consents).toEqual(e.body.consents);
  });

  it('PUT: 404 unknown user, 422 bad body, 422 undeclared purpose, 400 bad JSON', async () => {
    expect((await put(rec.a, uid(), { consents: { analytics: true } })).status).toBe(404);
    const userId = uid();
    await post(rec.a, { userId, email: 'q@shop.example', consents: { analytics: true } });
    const r = await put(rec.a, userId, { consents: { analytics: 'no' }, email: 'x', other: 1 });
    expect(r.status).toBe(422);
    expect(r.body.errors.map((e: { path: string }) => e.path).sort()).toEqual([
      '/',
      '/consents/analytics',
      '/email',
    ]);
    const raw = await rec.f.call('PUT', `/api/v1/consents/${userId}`, {
      headers: bearer(rec.a.key),
      raw: '{',
    });
    expect(raw.status).toBe(400);

    const nu = uid();
    await post(rec.n, { userId: nu, email: 'q@shop.example', consents: { analytics: true } });
    const und = await put(rec.n, nu, { consents: { tracking: true } });
    expect(und.status).toBe(422);
    expect(und.body.errors).toEqual([{ path: '/consents/tracking', message: expect.any(String) }]);
    expect((await put(rec.n, nu, {}, rec.n.readOnlyKey)).status).toBe(403);
  });

  it('DELETE withdraws every purpose once; a repeat is 200 with the same state and no event', async () => {
    const userId = uid();
    const c = await post(rec.a, {
      userId,
      email: 'w@shop.example',
      consents: { analytics: true, marketing: true, ads: false },
    });
    const r = await del(rec.a, userId);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      consents: { analytics: false, marketing: false, ads: false },
      status: 'withdrawn',
    });
    const events = await rec.f.waitForEvents(c.body.referenceId, 3);
    expect(events.map((e) => e.type)).toEqual([
      'consent.created',
      'consent.granted',
      'consent.withdrawn',
    ]);
    expect(events[2]!.data.purposes).toEqual({ analytics: false, marketing: false });
    expect(events[2]!.data.recordIds).toHaveLength(2);

    const again = await del(rec.a, userId);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(r.body);
    // A later change for the same principal arrives after anything the repeat could have sent.
    await put(rec.a, userId, { consents: { ads: true } });
    const later = await rec.f.waitForEvents(c.body.referenceId, 4);
    expect(later.map((e) => e.type)).toEqual([
      'consent.created',
      'consent.granted',
      'consent.withdrawn',
      'consent.granted',
    ]);

    expect((await del(rec.a, uid())).status).toBe(404);
    expect((await del(rec.a, userId, rec.a.readOnlyKey)).status).toBe(403);
  });

  it('a write-only key (no consents:read) gets a receipt, never the record: PUT {} and DELETE are no reads', async () => {
    const userId = uid();
    const email = 'private@shop.example';
    await post(rec.a, { userId, email, consents: { analytics: true, marketing: false } });
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
    isReceipt(await put(rec.a, userId, {}, rec.a.writeOnlyKey));
    isReceipt(await put(rec.a, userId, { consents: { marketing: true } }, rec.a.writeOnlyKey));
    isReceipt(await del(rec.a, userId, rec.a.writeOnlyKey));
    isReceipt(
      await post(
        rec.a,
        { userId: uid(), email: 'new@shop.example', consents: { analytics: true } },
        rec.a.writeOnlyKey,
      ),
      201,
    );
    // The writes did apply; a key that may read sees the record, from GET and from a write.
    expect((await get(rec.a, userId)).body.consents).toEqual({
      analytics: false,
      marketing: false,
    });
    expect((await put(rec.a, userId, {})).body).toMatchObject({
      email,
      consents: { analytics: false, marketing: false },
    });
  });

  it('concurrent PUTs on one record all apply (optimistic locking re-reads and re-applies)', async () => {
    const userId = uid();
    await post(rec.a, {
      userId,
      email: 'cc@shop.example',
      consents: { p1: false, p2: false, p3: false, p4: false },
    });
    const rs = await Promise.all(
      ['p1', 'p2', 'p3', 'p4'].map((p) => put(rec.a, userId, { consents: { [p]: true } })),
    );
    expect(rs.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect((await get(rec.a, userId)).body.consents).toEqual({
      p1: true,
      p2: true,
      p3: true,
      p4: true,
    });
    const txn = (await rec.f.itemsOf(rec.a.app.appId))
      .kinds('transaction')
      .find((t) => t.userId === userId);
    expect(txn?.version).toBe(5);
  });

  it('Idempotency-Key replays the first answer without applying twice', async () => {
    const userId = uid();
    const body = { userId, email: 'i@shop.example', consents: { analytics: true } };
    const h = { ...bearer(rec.a.key), 'idempotency-key': `k-${userId}` };
    const first = await rec.f.call('POST', '/api/v1/consents', { headers: h, body });
    const second = await rec.f.call('POST', '/api/v1/consents', { headers: h, body });
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(second.body).toEqual(first.body);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
  });
});
