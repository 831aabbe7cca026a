import { describe, expect, it } from 'vitest';
import { browser, secret, usePublicApi, PUBLIC_TRANSACTIONS } from './fixture.js';
import { withFullRecords, type StoredTransaction } from '../../shared/domain/consent/model.js';

const { pub, capture, op } = usePublicApi('consent-public-bulk');
const P = PUBLIC_TRANSACTIONS;

describe('bulk', () => {
  it('applies each item on its own and reports per item; neither list means all', async () => {
    const c1 = await capture();
    const c2 = await capture({ referenceId: c1.referenceId });
    const stranger = await capture();
    const t2 = (await pub.f.call('GET', `${P}/${c2.transactionId}`, { headers: secret(pub.a) }))
      .body;
    const erasedRecord = t2.records[2].recordId;
    await op(`/records/${erasedRecord}/erase`);

    const r = await op('/bulk/grant', {
      referenceId: c1.referenceId,
      transactionIds: [c1.transactionId, stranger.transactionId, 'nope'],
      recordIds: [t2.records[2].recordId, t2.records[0].recordId],
    });
    expect(r.status).toBe(200);
    expect(r.body.results).toEqual([
      { id: c1.transactionId, ok: true, status: 'active' },
      {
        id: stranger.transactionId,
        ok: false,
        error: { code: 'SVC_NOT_FOUND', detail: expect.any(String) },
      },
      { id: 'nope', ok: false, error: { code: 'SVC_NOT_FOUND', detail: expect.any(String) } },
      { id: erasedRecord, ok: false, error: { code: 'SVC_CONFLICT', detail: expect.any(String) } },
      { id: t2.records[0].recordId, ok: true, status: 'active' },
    ]);
    // The stranger's transaction was not touched.
    const s = await pub.f.call('GET', `${P}/${stranger.transactionId}`, { headers: secret(pub.a) });
    expect(s.body.records.map((x: { state: string }) => x.state)).toEqual([
      'granted',
      'granted',
      'denied',
    ]);

    const all = await op('/bulk/revoke', { referenceId: c1.referenceId });
    // Oldest first: the order they were created in.
    expect(all.body.results).toEqual([
      { id: c1.transactionId, ok: true, status: 'revoked' },
      { id: c2.transactionId, ok: true, status: 'revoked' },
    ]);
    const events = await pub.f.waitForEvents(c1.referenceId, 8);
    expect(
      events
        .filter((e) => e.type === 'consent.withdrawn')
        .map((e) => e.data.consentId)
        .sort(),
    ).toEqual([c1.transactionId, c2.transactionId].sort());

    const erase = await op('/bulk/erase', {
      referenceId: c1.referenceId,
      transactionIds: [c1.transactionId],
    });
    expect(erase.body.results).toEqual([{ id: c1.transactionId, ok: true, status: 'erased' }]);
  });

  it('more than 100 ids, or a bad body, is 422', async () => {
    const ids = Array.from({ length: 60 }, (_, i) => `id-${i}`);
    const r = await op('/bulk/revoke', {
      referenceId: 'SVC-REF-00000000',
      transactionIds: ids,
      recordIds: ids,
    });
    expect(r.status).toBe(422);
    expect(r.body.errors[0].path).toBe('/transactionIds');
    const big = await op('/bulk/revoke', {
      referenceId: 'SVC-REF-00000000',
      recordIds: Array.from({ length: 101 }, (_, i) => `r${i}`),
    });
    expect(big.status).toBe(422);
    expect(big.body.errors[0].path).toBe('/recordIds');
    expect((await op('/bulk/revoke', {})).status).toBe(422);
    expect(
      (await pub.f.call('POST', `${P}/bulk/revoke`, { headers: secret(pub.a), raw: '[' })).status,
    ).toBe(400);
    const hundred = await op('/bulk/revoke', {
      referenceId: 'SVC-REF-00000000',
      recordIds: ids,
      transactionIds: ids.slice(0, 40),
    });
    expect(hundred.status).toBe(200);
    expect(hundred.body.results).toHaveLength(100);
  });
});

describe('authentication and CORS', () => {
  it('server: missing or wrong secret key 401', async () => {
    const c = await capture();
    expect((await pub.f.call('GET', `${P}/${c.transactionId}`)).status).toBe(401);
    expect(
      (
        await pub.f.call('GET', `${P}/${c.transactionId}`, {
          headers: { 'x-secret-key': `svc_sk_test_${'A'.repeat(40)}` },
        })
      ).status,
    ).toBe(401);
    expect(
      (await pub.f.call('GET', `${P}/${c.transactionId}`, { headers: { 'x-secret-key': 'junk' } }))
        .status,
    ).toBe(401);
    expect((await op(`/${c.transactionId}/revoke`, {}, { 'x-secret-key': 'junk' })).status).toBe(
      401,
    );
  });

  it('browser: site key from an allowed origin with a principal token works (CORS header); other origins 403; unknown site key 401', async () => {
    const c = await capture();
    const token = await pub.f.mintToken(pub.a, c.referenceId);
    const ok = await pub.f.call('GET', `${P}/${c.transactionId}`, {
      headers: browser(pub.a, token),
    });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('access-control-allow-origin')).toBe(pub.a.origin);

    const evil = await pub.f.call('GET', `${P}/${c.transactionId}`, {
      headers: browser(pub.a, token, 'https://evil.example'),
    });
    expect(evil.status).toBe(403);
    expect(evil.headers.get('access-control-allow-origin')).toBeNull();
    const noOrigin = await pub.f.call('GET', `${P}/${c.transactionId}`, {
      headers: { 'x-site-key': pub.a.siteKey },
    });
    expect(noOrigin.status).toBe(403);
    const evilWrite = await op(
      `/${c.transactionId}/revoke`,
      {},
      browser(pub.a, token, 'https://evil.example'),
    );
    expect(evilWrite.status).toBe(403);
    expect(
      (
        await pub.f.call('GET', `${P}/${c.transactionId}`, {
          headers: { 'x-site-key': `APP_${'a'.repeat(24)}`, origin: pub.a.origin },
        })
      ).status,
    ).toBe(401);
    // The refused write changed nothing.
    expect(
      (await pub.f.call('GET', `${P}/${c.transactionId}`, { headers: secret(pub.a) })).body.status,
    ).toBe('active');
  });

  it('answers CORS preflight on every path', async () => {
    for (const path of [P, `${P}/x/revoke`, `${P}/records/x/grant`, `${P}/bulk/erase`]) {
      const r = await pub.f.call('OPTIONS', path, {
        headers: {
          origin: pub.a.origin,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'x-site-key, content-type',
        },
      });
      expect(r.status, path).toBe(204);
      expect(r.headers.get('access-control-allow-origin')).toBe(pub.a.origin);
      expect(r.headers.get('access-control-allow-headers')).toContain('x-site-key');
      expect(r.headers.get('access-control-allow-methods')).toContain('POST');
    }
  });

  it('a rotated-away secret key is 401 at once; the new one works', async () => {
    const c = await capture();
    const old = pub.a.secretKey;
    const { secretKey } = await pub.f.admin('POST', `/apps/${pub.a.app.appId}/secret/rotate`);
    pub.a.secretKey = secretKey;
    const stale = await pub.f.call('GET', `${P}/${c.transactionId}`, {
      headers: { 'x-secret-key': old },
    });
    expect(stale.status).toBe(401);
    expect((await op(`/${c.transactionId}/revoke`, {}, { 'x-secret-key': old })).status).toBe(401);
    expect(
      (await pub.f.call('GET', `${P}/${c.transactionId}`, { headers: secret(pub.a) })).status,
    ).toBe(200);
  });

  it('records who acted: portal via a principal token, api via secret key', async () => {
    const c = await capture();
    const t = (await pub.f.call('GET', `${P}/${c.transactionId}`, { headers: secret(pub.a) })).body;
    const token = await pub.f.mintToken(pub.a, c.referenceId);
    await op(`/records/${t.records[1].recordId}/revoke`, {}, browser(pub.a, token));
    await op(`/records/${t.records[1].recordId}/grant`, {}, secret(pub.a));
    // In the order the changes were made.
    const hist = (await pub.f.itemsOf(pub.a.app.appId))
      .history()
      .filter((h) => h.transactionId === c.transactionId);
    expect(hist.map((h) => [h.operation, h.from, h.to, h.who])).toEqual([
      ['create', null, 'granted', { source: 'widget', credential: 'siteKey' }],
      ['create', null, 'granted', { source: 'widget', credential: 'siteKey' }],
      ['create', null, 'denied', { source: 'widget', credential: 'siteKey' }],
      ['revoke', 'granted', 'revoked', { source: 'portal', credential: 'principalToken' }],
      ['grant', 'revoked', 'granted', { source: 'api', credential: 'secretKey' }],
    ]);
    // An entry names its record; the purpose is the record's, and the notice and language
    // the transaction's own.
    const txnItem = (await pub.f.itemsOf(pub.a.app.appId))
      .kinds('transaction')
      .find((x) => x.transactionId === c.transactionId)!;
    expect(txnItem).toMatchObject({
      noticeId: pub.a.notice!.noticeId,
      noticeVersion: 1,
      language: 'en',
    });
    // As stored, a record leaves out the id its place derives (model.ts, `compactRecords`).
    const { records } = withFullRecords(txnItem as unknown as StoredTransaction);
    expect(records.find((r) => r.recordId === hist[3]!.recordId)?.purpose).toBe('analytics');
  });
});

describe('OpenAPI', () => {
  it('documents every route of the record API and the public API with its schemas', async () => {
    const r = await pub.f.call('GET', '/openapi.json');
    expect(r.status).toBe(200);
    const paths = r.body.paths as Record<
      string,
      Record<string, { requestBody?: unknown; parameters: { name: string }[] }>
    >;
    expect(Object.keys(paths['/api/v1/consents']!)).toEqual(['post']);
    expect(Object.keys(paths['/api/v1/consents/{userId}']!).sort()).toEqual([
      'delete',
      'get',
      'put',
    ]);
    expect(paths['/api/v1/consents']!.post!.requestBody).toBeDefined();
    expect(
      paths['/api/public/consents/my-transactions']!.get!.parameters.map((p) => p.name),
    ).toEqual(['referenceId', 'limit', 'cursor']);
    for (const op of ['grant', 'revoke', 'erase']) {
      expect(
        paths[`/api/public/consents/my-transactions/{transactionId}/${op}`]?.post,
      ).toBeDefined();
      expect(
        paths[`/api/public/consents/my-transactions/records/{recordId}/${op}`]?.post,
      ).toBeDefined();
      expect(
        paths[`/api/public/consents/my-transactions/bulk/${op}`]?.post?.requestBody,
      ).toBeDefined();
    }
    expect(paths['/api/public/consents/my-transactions/{transactionId}']?.get).toBeDefined();
  });
});
