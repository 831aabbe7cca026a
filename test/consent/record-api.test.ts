import { describe, expect, it } from 'vitest';
import { captureConsent } from '../../shared/domain/consent/index.js';
import { derivedReferenceOf } from '../../shared/storage/consents/repository.js';
import { getNoticeByTriggerKey } from '../../shared/domain/notices.js';
import { bearer, useRecordApi } from './fixture.js';

const { rec, uid, post, get, put, del } = useRecordApi('consent-record');

describe('POST /api/v1/consents', () => {
  it('creates the record: 201, Location, body, and consent.created + consent.granted on Kafka', async () => {
    const userId = uid();
    const r = await post(rec.a, {
      userId,
      email: 'asha@shop.example',
      consents: { analytics: true, marketing: false },
    });
    expect(r.status).toBe(201);
    expect(r.headers.get('location')).toBe(`/api/v1/consents/${encodeURIComponent(userId)}`);
    expect(r.body).toEqual({
      userId,
      email: 'asha@shop.example',
      referenceId: expect.stringMatching(/^SVC-REF-[0-9A-HJKMNP-TV-Z]{8}$/),
      consents: { analytics: true, marketing: false },
      status: 'active',
      transactionId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      createdAt: expect.any(String),
      updatedAt: r.body.createdAt,
      expiresAt: new Date(Date.parse(r.body.createdAt) + 365 * 86_400_000).toISOString(),
    });

    const events = await rec.f.waitForEvents(r.body.referenceId, 2);
    expect(events.map((e) => e.type)).toEqual(['consent.created', 'consent.granted']);
    const [created, granted] = events;
    expect(created).toMatchObject({
      apiVersion: 'v1',
      appId: rec.a.app.appId,
      environment: 'sandbox',
      data: {
        referenceId: r.body.referenceId,
        userId,
        consentId: r.body.transactionId,
        purposes: { analytics: true, marketing: false },
        noticeId: null,
        noticeVersion: null,
        expiresAt: r.body.expiresAt,
      },
    });
    expect(created!.data.recordIds).toHaveLength(2);
    expect(created!.data.postback).toBeUndefined();
    expect(granted!.data.purposes).toEqual({ analytics: true });
    expect(granted!.data.recordIds).toHaveLength(1);
    expect(created!.data.recordIds).toContain(granted!.data.recordIds[0]);

    // The storage layout: the principal at the referenceId the user id derives to, holding the
    // user's transaction id (no user pointer), and the transaction (with its history); no record
    // pointers, as the record ids are derived from the transaction id.
    expect(r.body.referenceId).toBe(await derivedReferenceOf(rec.f.p.rt, rec.a.app.appId, userId));
    const items = await rec.f.itemsOf(rec.a.app.appId);
    const mine = items.all.filter(
      (i) => i.referenceId === r.body.referenceId || i.userId === userId,
    );
    expect(mine.map((i) => i.kind).sort()).toEqual(['principal', 'transaction']);
    expect(items.kinds('principal').find((p) => p.userId === userId)).toMatchObject({
      referenceId: r.body.referenceId,
      userTransactionId: r.body.transactionId,
    });
    const hist = items.history().filter((h) => h.transactionId === r.body.transactionId);
    expect(hist).toHaveLength(2);
    expect(hist[0]).toMatchObject({
      who: { source: 'api', credential: rec.a.keyId },
      from: null,
      operation: 'create',
    });
  });

  it('status is withdrawn when nothing is granted', async () => {
    const r = await post(rec.a, {
      userId: uid(),
      email: 'b@shop.example',
      consents: { analytics: false },
    });
    expect(r.status).toBe(201);
    expect(r.body.status).toBe('withdrawn');
    const events = await rec.f.waitForEvents(r.body.referenceId, 1);
    expect(events.map((e) => e.type)).toEqual(['consent.created']);
  });

  it('a second POST for the user is 409 and writes nothing', async () => {
    const userId = uid();
    expect(
      (await post(rec.a, { userId, email: 'c@shop.example', consents: { analytics: true } }))
        .status,
    ).toBe(201);
    const before = (await rec.f.itemsOf(rec.a.app.appId)).all.length;
    const again = await post(rec.a, {
      userId,
      email: 'c@shop.example',
      consents: { marketing: true },
    });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ code: 'SVC_CONFLICT', status: 409 });
    expect((await rec.f.itemsOf(rec.a.app.appId)).all.length).toBe(before);
  });

  it('two concurrent POSTs for one user: exactly one wins, the loser leaves nothing behind', async () => {
    const userId = uid();
    const body = { userId, email: 'race@shop.example', consents: { analytics: true } };
    const results = await Promise.all([post(rec.a, body), post(rec.a, body), post(rec.a, body)]);
    expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409]);
    const items = await rec.f.itemsOf(rec.a.app.appId);
    const principals = items.kinds('principal').filter((i) => i.userId === userId);
    expect(principals).toHaveLength(1);
    const txns = items.kinds('transaction').filter((i) => i.userId === userId);
    expect(txns).toHaveLength(1);
  });

  it('rejects bad input: malformed JSON 400, schema 422 with paths, bad purpose names', async () => {
    const bad = await rec.f.call('POST', '/api/v1/consents', {
      headers: bearer(rec.a.key),
      raw: '{"userId":',
    });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('SVC_BAD_JSON');

    const r = await post(rec.a, {
      userId: 'has space',
      email: 'not-an-email',
      consents: { Bad: true, ok: 'yes' },
      extra: 1,
    });
    expect(r.status).toBe(422);
    expect(r.headers.get('content-type')).toContain('application/problem+json');
    expect(r.body.code).toBe('SVC_VALIDATION_FAILED');
    expect(r.body.errors.map((e: { path: string }) => e.path).sort()).toEqual(
      ['/', '/consents/Bad', '/consents/ok', '/email', '/userId'].sort(),
    );

    const empty = await post(rec.a, { userId: uid(), email: 'e@shop.example', consents: {} });
    expect(empty.status).toBe(422);
    expect(empty.body.errors).toEqual([expect.objectContaining({ path: '/consents' })]);

    const noBody = await rec.f.call('POST', '/api/v1/consents', { headers: bearer(rec.a.key) });
    expect(noBody.status).toBe(422);
  });

  it('an undeclared purpose is 422 for an app with notices, and nothing is written', async () => {
    const before = (await rec.f.itemsOf(rec.n.app.appId)).all.length;
    const r = await post(rec.n, {
      userId: uid(),
      email: 'd@shop.example',
      consents: { analytics: true, tracking: true },
    });
    expect(r.status).toBe(422);
    expect(r.body.errors).toEqual([{ path: '/consents/tracking', message: expect.any(String) }]);
    expect((await rec.f.itemsOf(rec.n.app.appId)).all.length).toBe(before);
    // Declared purposes pass.
    expect(
      (await post(rec.n, { userId: uid(), email: 'd@shop.example', consents: { analytics: true } }))
        .status,
    ).toBe(201);
  });

  it('credentials: missing or wrong 401, revoked 401, missing scope 403', async () => {
    const body = { userId: uid(), email: 'e@shop.example', consents: { analytics: true } };
    const none = await rec.f.call('POST', '/api/v1/consents', { body });
    expect(none.status).toBe(401);
    expect(none.body.code).toBe('SVC_UNAUTHORIZED');
    expect((await post(rec.a, body, `svc_ak_${'x'.repeat(40)}`)).status).toBe(401);
    expect((await post(rec.a, body, 'garbage')).status).toBe(401);
    expect((await post(rec.a, body, rec.a.readOnlyKey)).status).toBe(403);
    expect((await get(rec.a, body.userId, rec.a.writeOnlyKey)).status).toBe(403);

    const extra = await rec.f.admin('POST', `/apps/${rec.a.app.appId}/api-keys`, {
      name: 'tmp',
      scopes: ['consents:write'],
    });
    expect((await post(rec.a, body, extra.key)).status).toBe(201);
    await rec.f.admin('DELETE', `/apps/${rec.a.app.appId}/api-keys/${extra.id}`);
    expect((await post(rec.a, { ...body, userId: uid() }, extra.key)).status).toBe(401);
  });
});

describe('POST with consentId (link a widget capture)', () => {
  async function capture() {
    const notice = (await getNoticeByTriggerKey(rec.f.p.rt, rec.n.app.appId, 'newsletter_signup'))!;
    return captureConsent(rec.f.p.rt, rec.n.app, notice, {
      mode: 'granular',
      granted: ['essential', 'marketing'],
      language: 'en',
      pageUrl: 'https://shop.example/signup',
      userAgent: 'test',
      ipHash: 'h',
    });
  }

  it('links the capture and its principal to the user and applies consents on top', async () => {
    const c = await capture();
    const userId = uid();
    const r = await post(rec.n, {
      userId,
      email: 'link@shop.example',
      consentId: c.transactionId,
      consents: { analytics: true, marketing: false },
    });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({
      userId,
      referenceId: c.referenceId,
      transactionId: c.transactionId,
      expiresAt: c.expiresAt,
      consents: { essential: true, marketing: false, analytics: true },
      status: 'active',
    });
    expect((await get(rec.n, userId)).body).toEqual(r.body);
    // The public API shows the link too.
    const pub = await rec.f.call('GET', `/api/public/consents/my-transactions/${c.transactionId}`, {
      headers: { 'x-secret-key': rec.n.secretKey },
    });
    expect(pub.body).toMatchObject({ userId, source: 'widget', status: 'partially_revoked' });

    const events = await rec.f.waitForEvents(c.referenceId, 4);
    expect(events.map((e) => e.type)).toEqual([
      'consent.created',
      'consent.granted',
      'consent.granted',
      'consent.withdrawn',
    ]);
    expect(events[2]!.data).toMatchObject({ userId, purposes: { analytics: true } });
    expect(events[3]!.data).toMatchObject({
      userId,
      purposes: { marketing: false },
      noticeId: rec.n.notice!.noticeId,
      noticeVersion: 1,
    });
    const items = await rec.f.itemsOf(rec.n.app.appId);
    expect(items.kinds('principal').find((p) => p.referenceId === c.referenceId)).toMatchObject({
      userId,
      email: 'link@shop.example',
    });
  });

  it('unknown consentId 404; consentId of another user 409, nothing written', async () => {
    expect(
      (
        await post(rec.n, {
          userId: uid(),
          email: 'x@shop.example',
          consentId: '01890000-0000-7000-8000-000000000000',
          consents: {},
        })
      ).status,
    ).toBe(404);
    expect(
      (
        await post(rec.n, {
          userId: uid(),
          email: 'x@shop.example',
          consentId: 'nonsense',
          consents: {},
        })
      ).status,
    ).toBe(404);

    const c = await capture();
    const first = uid();
    expect(
      (
        await post(rec.n, {
          userId: first,
          email: 'x@shop.example',
          consentId: c.transactionId,
          consents: {},
        })
      ).status,
    ).toBe(201);
    const before = await rec.f.itemsOf(rec.n.app.appId);
    const second = uid();
    const r = await post(rec.n, {
      userId: second,
      email: 'y@shop.example',
      consentId: c.transactionId,
      consents: { analytics: true },
    });
    expect(r.status).toBe(409);
    const after = await rec.f.itemsOf(rec.n.app.appId);
    expect(after.all.length).toBe(before.all.length);
    expect(after.kinds('user').some((u) => u.userId === second)).toBe(false);
    expect(after.kinds('transaction').find((t) => t.transactionId === c.transactionId)).toEqual(
      before.kinds('transaction').find((t) => t.transactionId === c.transactionId),
    );
  });
});

describe('reads of a user record', () => {
  /**
   * The keys of the entities items the process reads whole, one by one, while `fn` runs (the
   * activity tracking's read of a principal's activity fields, projected and at most once a
   * day per principal and process, is not counted).
   */
  async function gets(fn: () => Promise<unknown>): Promise<string[]> {
    const seen: string[] = [];
    const doc = rec.f.p.rt.dynamo.doc;
    const name = `countGets-${Math.random()}`;
    doc.middlewareStack.add(
      (next) => async (args) => {
        const input = args.input as {
          TableName?: string;
          Key?: { pk: string; sk: string };
          ProjectionExpression?: string;
        };
        if (
          input.TableName === rec.f.p.rt.tables.entities &&
          input.Key &&
          input.ProjectionExpression === undefined
        )
          seen.push(`${input.Key.pk}|${input.Key.sk}`);
        return next(args);
      },
      { step: 'initialize', name },
    );
    try {
      await fn();
    } finally {
      doc.middlewareStack.remove(name);
    }
    return seen;
  }
  const principals = (keys: string[]) => keys.filter((k) => k.endsWith('|PRINCIPAL'));

  it('GET, PUT and DELETE read the whole principal once: the lookup by user id finds it', async () => {
    const userId = uid();
    const created = await post(rec.a, {
      userId,
      email: 'once@shop.example',
      consents: { analytics: true },
    });
    expect(created.status).toBe(201);
    const read = await gets(async () => {
      const r = await get(rec.a, userId);
      expect(r.status).toBe(200);
      expect(r.body.email).toBe('once@shop.example');
    });
    expect(principals(read)).toHaveLength(1);
    const updated = await gets(async () => {
      const r = await put(rec.a, userId, { email: 'twice@shop.example' });
      expect(r.status).toBe(200);
      expect(r.body.email).toBe('twice@shop.example');
    });
    expect(principals(updated)).toHaveLength(1);
    const withdrawn = await gets(async () => {
      const r = await del(rec.a, userId);
      expect(r.status).toBe(200);
      expect(r.body.email).toBe('twice@shop.example');
    });
    expect(principals(withdrawn)).toHaveLength(1);
  });
});
