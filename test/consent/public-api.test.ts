import { describe, expect, it } from 'vitest';
import { secret, usePublicApi, PUBLIC_TRANSACTIONS, type Reply } from './fixture.js';

const { pub, capture, op } = usePublicApi('consent-public');
const P = PUBLIC_TRANSACTIONS;
/** The app's sandbox time scale (usePublicApi): a 1 h postback window is 1 s. */
const SCALE = 3600;

describe('reading transactions', () => {
  it('GET /my-transactions pages a principal’s transactions newest first with an opaque cursor', async () => {
    const first = await capture();
    const ids = [first.transactionId];
    for (let i = 0; i < 4; i++)
      ids.push((await capture({ referenceId: first.referenceId })).transactionId);

    const seen: string[] = [];
    let cursor: string | null = null;
    const sizes: number[] = [];
    do {
      const q: string = `referenceId=${first.referenceId}&limit=2${cursor ? `&cursor=${cursor}` : ''}`;
      const r: Reply = await pub.f.call('GET', `${P}?${q}`, { headers: secret(pub.a) });
      expect(r.status).toBe(200);
      sizes.push(r.body.items.length);
      seen.push(...r.body.items.map((t: { transactionId: string }) => t.transactionId));
      cursor = r.body.nextCursor;
      if (cursor) expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    } while (cursor);
    expect(sizes).toEqual([2, 2, 1]);
    expect(seen).toEqual([...ids].reverse());

    const all = await pub.f.call('GET', `${P}?referenceId=${first.referenceId}`, {
      headers: secret(pub.a),
    });
    expect(all.body.items).toHaveLength(5);
    expect(all.body.nextCursor).toBeNull();
    expect(all.body.items[4]).toEqual({
      transactionId: first.transactionId,
      referenceId: first.referenceId,
      processId: 'signup',
      noticeId: pub.a.notice!.noticeId,
      noticeVersion: 1,
      language: 'en',
      source: 'widget',
      status: 'active',
      createdAt: expect.any(String),
      expiresAt: first.expiresAt,
      records: [
        {
          recordId: expect.any(String),
          purpose: 'essential',
          state: 'granted',
          updatedAt: expect.any(String),
        },
        {
          recordId: expect.any(String),
          purpose: 'analytics',
          state: 'granted',
          updatedAt: expect.any(String),
        },
        {
          recordId: expect.any(String),
          purpose: 'marketing',
          state: 'denied',
          updatedAt: expect.any(String),
        },
      ],
    });

    // A principal with nothing is an empty list, not an error.
    const none = await pub.f.call('GET', `${P}?referenceId=SVC-REF-00000000`, {
      headers: secret(pub.a),
    });
    expect(none.body).toEqual({ items: [], nextCursor: null });

    // A cursor of another principal is refused, not followed.
    const other = await capture();
    const page = await pub.f.call('GET', `${P}?referenceId=${first.referenceId}&limit=1`, {
      headers: secret(pub.a),
    });
    const foreign = await pub.f.call(
      'GET',
      `${P}?referenceId=${other.referenceId}&cursor=${page.body.nextCursor}`,
      {
        headers: secret(pub.a),
      },
    );
    expect(foreign.status).toBe(422);
    expect(foreign.body.errors).toEqual([{ path: '/cursor', message: expect.any(String) }]);
  });

  it('GET /my-transactions rejects a bad query with 422 and the failing paths', async () => {
    for (const [q, path] of [
      ['', '/referenceId'],
      ['referenceId=nope', '/referenceId'],
      ['referenceId=SVC-REF-00000000&limit=0', '/limit'],
      ['referenceId=SVC-REF-00000000&limit=101', '/limit'],
      ['referenceId=SVC-REF-00000000&limit=x', '/limit'],
      ['referenceId=SVC-REF-00000000&cursor=%21%21', '/cursor'],
    ]) {
      const r = await pub.f.call('GET', `${P}?${q}`, { headers: secret(pub.a) });
      expect(r.status, q).toBe(422);
      expect(
        r.body.errors.map((e: { path: string }) => e.path),
        q,
      ).toContain(path);
    }
  });

  it('GET /my-transactions/:id answers the transaction; 404 for unknown ids or another principal', async () => {
    const c = await capture();
    const r = await pub.f.call('GET', `${P}/${c.transactionId}`, { headers: secret(pub.a) });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      transactionId: c.transactionId,
      referenceId: c.referenceId,
      status: 'active',
    });
    expect(r.body).not.toHaveProperty('proof');
    expect(
      (
        await pub.f.call('GET', `${P}/${c.transactionId}?referenceId=${c.referenceId}`, {
          headers: secret(pub.a),
        })
      ).status,
    ).toBe(200);
    expect(
      (
        await pub.f.call('GET', `${P}/${c.transactionId}?referenceId=SVC-REF-00000000`, {
          headers: secret(pub.a),
        })
      ).status,
    ).toBe(404);
    expect(
      (
        await pub.f.call('GET', `${P}/01890000-0000-7000-8000-000000000000`, {
          headers: secret(pub.a),
        })
      ).status,
    ).toBe(404);
    expect((await pub.f.call('GET', `${P}/not-an-id`, { headers: secret(pub.a) })).status).toBe(
      404,
    );
  });
});

describe('changing transactions and records', () => {
  it('revoke, grant and erase a transaction; events carry records, postback and key', async () => {
    const c = await capture();
    const revoked = await op(`/${c.transactionId}/revoke`, { referenceId: c.referenceId });
    expect(revoked.status).toBe(200);
    expect(revoked.body.status).toBe('revoked');
    expect(revoked.body.records.map((r: { state: string }) => r.state)).toEqual([
      'revoked',
      'revoked',
      'denied',
    ]);

    const again = await op(`/${c.transactionId}/revoke`);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(revoked.body);

    const granted = await op(`/${c.transactionId}/grant`);
    expect(granted.body.status).toBe('active');
    expect(granted.body.records.map((r: { state: string }) => r.state)).toEqual([
      'granted',
      'granted',
      'granted',
    ]);

    const erased = await op(`/${c.transactionId}/erase`);
    expect(erased.body.status).toBe('erased');

    const events = await pub.f.waitForEvents(c.referenceId, 5);
    expect(events.map((e) => e.type)).toEqual([
      'consent.created',
      'consent.granted',
      'consent.withdrawn',
      'consent.granted',
      'data.deleted',
    ]);
    const ids = revoked.body.records.map((r: { recordId: string }) => r.recordId);
    const [, , withdrawn, regranted, deleted] = events;
    expect(withdrawn!.data.recordIds).toEqual(ids.slice(0, 2));
    expect(withdrawn!.data.purposes).toEqual({ essential: false, analytics: false });
    expect(withdrawn!.data.postback).toEqual({
      required: true,
      dueAt: new Date(Date.parse(withdrawn!.createdAt) + 3_600_000 / SCALE).toISOString(),
      url: 'http://localhost:8080/api/v1/server/consent/action',
    });
    expect(regranted!.data.recordIds).toEqual(ids);
    expect(regranted!.data.postback).toBeUndefined();
    expect(deleted!.data).toMatchObject({
      recordIds: ids,
      purposes: { essential: false, analytics: false, marketing: false },
    });
    expect(deleted!.data.postback?.dueAt).toBe(
      new Date(Date.parse(deleted!.createdAt) + 86_400_000 / SCALE).toISOString(),
    );
    for (const e of events) expect(e.data.consentId).toBe(c.transactionId);
    const keys = pub.f.messages.filter(
      (m) => (m.value as { data?: { referenceId?: string } }).data?.referenceId === c.referenceId,
    );
    expect(new Set(keys.map((m) => m.key))).toEqual(
      new Set([`${pub.a.app.appId}:${c.referenceId}`]),
    );
    expect(new Set(keys.map((m) => m.partition)).size).toBe(1);

    // Erased is terminal.
    const regrant = await op(`/${c.transactionId}/grant`);
    expect(regrant.status).toBe(409);
    expect(regrant.body.code).toBe('SVC_CONFLICT');
    const recGrant = await op(`/records/${ids[0]}/grant`);
    expect(recGrant.status).toBe(409);
    expect((await op(`/${c.transactionId}/erase`)).status).toBe(200);
    expect((await op(`/${c.transactionId}/revoke`)).status).toBe(200);
  });

  it('record operations change one record; revoke on denied is a no-op', async () => {
    const c = await capture();
    const t = (await pub.f.call('GET', `${P}/${c.transactionId}`, { headers: secret(pub.a) })).body;
    const [essential, analytics, marketing] = t.records.map(
      (r: { recordId: string }) => r.recordId,
    );

    const r1 = await op(`/records/${analytics}/revoke`, { referenceId: c.referenceId });
    expect(r1.status).toBe(200);
    expect(r1.body.status).toBe('partially_revoked');
    expect(r1.body.records.map((r: { state: string }) => r.state)).toEqual([
      'granted',
      'revoked',
      'denied',
    ]);

    expect((await op(`/records/${marketing}/revoke`)).body.records[2].state).toBe('denied');
    const g = await op(`/records/${marketing}/grant`);
    expect(g.body.records[2].state).toBe('granted');
    const e = await op(`/records/${essential}/erase`);
    expect(e.body.records.map((r: { state: string }) => r.state)).toEqual([
      'erased',
      'revoked',
      'granted',
    ]);
    expect(e.body.status).toBe('partially_revoked');

    const events = await pub.f.waitForEvents(c.referenceId, 5);
    expect(events.slice(2).map((x) => [x.type, x.data.recordIds])).toEqual([
      ['consent.withdrawn', [analytics]],
      ['consent.granted', [marketing]],
      ['data.deleted', [essential]],
    ]);

    expect(
      (await op(`/records/${analytics}/grant`, { referenceId: 'SVC-REF-00000000' })).status,
    ).toBe(404);
    expect((await op('/records/01890000-0000-7000-8000-000000000000/grant')).status).toBe(404);
    expect((await op('/records/zzz/grant')).status).toBe(404);
    expect((await op('/01890000-0000-7000-8000-000000000000/revoke')).status).toBe(404);
    expect(
      (await op(`/${c.transactionId}/revoke`, { referenceId: 'SVC-REF-00000000' })).status,
    ).toBe(404);
    expect((await op(`/${c.transactionId}/frobnicate`)).status).toBe(404);
  });

  it('bad bodies: malformed JSON 400, unknown field or bad referenceId 422', async () => {
    const c = await capture();
    const raw = await pub.f.call('POST', `${P}/${c.transactionId}/revoke`, {
      headers: secret(pub.a),
      raw: '{"x"',
    });
    expect(raw.status).toBe(400);
    const r = await op(`/${c.transactionId}/revoke`, { referenceId: 'x', extra: true });
    expect(r.status).toBe(422);
    expect(r.body.errors.map((e: { path: string }) => e.path).sort()).toEqual([
      '/',
      '/referenceId',
    ]);
    // No body at all is fine for single-item calls.
    const none = await pub.f.call('POST', `${P}/${c.transactionId}/revoke`, {
      headers: secret(pub.a),
    });
    expect(none.status).toBe(200);
  });
});
