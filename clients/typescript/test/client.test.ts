import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, NetworkError, ProblemError, TimeoutError } from '../src/index.js';
import { json, scriptedServer } from './server.js';

/** The client's HTTP behaviour against a real HTTP server on loopback that scripts its answers. */
let s: Awaited<ReturnType<typeof scriptedServer>>;
beforeAll(async () => {
  s = await scriptedServer();
});
afterAll(async () => {
  await s?.close();
});

const fast = { retries: 3, baseDelayMs: 5, maxDelayMs: 20 };
const receipt = {
  userId: 'user-42',
  referenceId: 'SVC-REF-7K2M9Q4T',
  transactionId: '0193b3c4-1d2e-7f00-8000-000000000001',
  updatedAt: '2026-11-22T10:00:00.000Z',
};
const problem = (status: number, code: string) => ({
  type: 'about:blank',
  title: code,
  status,
  code,
  detail: `${code} detail`,
  errors: [{ path: 'consents.marketing', message: 'unknown purpose' }],
});

describe('the client', () => {
  it('sends the key, the body and a fresh Idempotency-Key, and answers the typed body', async () => {
    s.answer((_q, res) => json(res, 201, receipt));
    const c = createClient({ baseUrl: s.url, apiKey: 'svc_ak_x', retry: fast });
    const r = await c.post('/api/v1/consents', {
      body: { userId: 'user-42', email: 'a@b.example', consents: { marketing: true } },
    });
    expect(r.referenceId).toBe('SVC-REF-7K2M9Q4T');
    await c.post('/api/v1/consents', {
      body: { userId: 'user-43', email: 'c@d.example', consents: {} },
    });
    const [a, b] = s.seen;
    expect(a).toMatchObject({ method: 'POST', url: '/api/v1/consents' });
    expect(a!.headers.authorization).toBe('Bearer svc_ak_x');
    expect(JSON.parse(a!.body)).toMatchObject({ userId: 'user-42' });
    expect(a!.headers['idempotency-key']).toMatch(/^[0-9a-f-]{36}$/);
    expect(b!.headers['idempotency-key']).not.toBe(a!.headers['idempotency-key']);
  });

  it('fills path parameters and the query', async () => {
    s.answer((_q, res) => json(res, 200, receipt));
    const c = createClient({ baseUrl: `${s.url}/`, apiKey: 'k' });
    await c.delete('/api/v1/consents/{userId}', { path: { userId: 'a b/c' } });
    await c.get('/api/public/consents/my-transactions', {
      query: { referenceId: 'SVC-REF-7K2M9Q4T' },
    });
    expect(s.seen.map((x) => `${x.method} ${x.url}`)).toEqual([
      'DELETE /api/v1/consents/a%20b%2Fc',
      'GET /api/public/consents/my-transactions?referenceId=SVC-REF-7K2M9Q4T',
    ]);
    expect(s.seen[0]!.headers['idempotency-key']).toBeUndefined();
  });

  it('retries 503 and 429 with the same Idempotency-Key, honouring Retry-After', async () => {
    s.answer((_q, res, n) =>
      n === 1
        ? json(res, 503, problem(503, 'SVC_UNAVAILABLE'), { 'retry-after': '1' })
        : n === 2
          ? json(res, 429, problem(429, 'SVC_RATE_LIMITED'))
          : json(res, 201, receipt),
    );
    const c = createClient({ baseUrl: s.url, retry: fast });
    const t0 = Date.now();
    await c.post('/api/v1/consents', {
      body: { userId: 'u', email: 'u@d.example', consents: {} },
      idempotencyKey: 'signup-u',
    });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1000);
    expect(s.seen.map((x) => x.headers['idempotency-key'])).toEqual([
      'signup-u',
      'signup-u',
      'signup-u',
    ]);
  });

  it('does not retry a 4xx: a typed ProblemError with the code and field errors', async () => {
    s.answer((_q, res) => json(res, 422, problem(422, 'SVC_VALIDATION_FAILED')));
    const c = createClient({ baseUrl: s.url, retry: fast });
    const err = await c
      .put('/api/v1/consents/{userId}', { path: { userId: 'u' }, body: { consents: {} } })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProblemError);
    expect(err).toMatchObject({ status: 422, code: 'SVC_VALIDATION_FAILED' });
    expect((err as ProblemError).errors).toEqual([
      { path: 'consents.marketing', message: 'unknown purpose' },
    ]);
    expect(s.seen).toHaveLength(1);
  });

  it('gives up after its retries on 5xx', async () => {
    s.answer((_q, res) => json(res, 500, problem(500, 'SVC_INTERNAL')));
    const c = createClient({ baseUrl: s.url, retry: fast });
    await expect(
      c.get('/api/v1/consents/{userId}', { path: { userId: 'u' } }),
    ).rejects.toMatchObject({
      name: 'ProblemError',
      status: 500,
    });
    expect(s.seen).toHaveLength(4);
  });

  it('times out an attempt, retries it, and then throws TimeoutError', async () => {
    s.answer(() => undefined); // never answers
    const c = createClient({ baseUrl: s.url, timeoutMs: 100, retry: { ...fast, retries: 1 } });
    await expect(
      c.get('/api/v1/consents/{userId}', { path: { userId: 'u' } }),
    ).rejects.toBeInstanceOf(TimeoutError);
    expect(s.seen).toHaveLength(2);
  });

  it('stops at once when the caller aborts, with the caller’s reason', async () => {
    s.answer(() => undefined);
    const c = createClient({ baseUrl: s.url, retry: fast });
    const ac = new AbortController();
    setTimeout(() => ac.abort(new Error('user left')), 50);
    await expect(
      c.get('/api/v1/consents/{userId}', { path: { userId: 'u' }, signal: ac.signal }),
    ).rejects.toThrow('user left');
    expect(s.seen).toHaveLength(1);
  });

  it('retries a refused connection and then throws NetworkError', async () => {
    const c = createClient({ baseUrl: 'http://127.0.0.1:9', retry: { ...fast, retries: 1 } });
    await expect(
      c.get('/api/v1/consents/{userId}', { path: { userId: 'u' } }),
    ).rejects.toBeInstanceOf(NetworkError);
  });

  it('walks a cursor-paged list with for await', async () => {
    s.answer((q, res) => {
      const cursor = new URL(q.url, s.url).searchParams.get('cursor');
      const page = cursor === null ? 0 : Number(cursor);
      json(res, 200, {
        items: [{ n: page * 2 }, { n: page * 2 + 1 }],
        nextCursor: page < 2 ? String(page + 1) : null,
      });
    });
    const c = createClient({ baseUrl: s.url, apiKey: 'k' });
    const seen: unknown[] = [];
    for await (const d of c.paginate('/api/v1/ledger/dispatches', { query: { limit: 2 } }))
      seen.push(d);
    expect(seen).toEqual([0, 1, 2, 3, 4, 5].map((n) => ({ n })));
    expect(s.seen.map((x) => x.url)).toEqual([
      '/api/v1/ledger/dispatches?limit=2',
      '/api/v1/ledger/dispatches?limit=2&cursor=1',
      '/api/v1/ledger/dispatches?limit=2&cursor=2',
    ]);
  });
});
