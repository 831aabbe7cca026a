import { describe, expect, it } from 'vitest';
import { check } from './oracle.js';
import type { FuzzRequest } from './request.js';
import { routesOf, type Route } from './routes.js';
import type { Answer } from './send.js';
import { World, type TenantApp } from './world.js';

/** The fuzz oracle must fail what it is meant to fail (a test that cannot fail is a defect). */

const ADMIN = 'fuzz-admin-token-000000000000';

function tenant(label: string): TenantApp {
  const l = label.toLowerCase();
  return {
    label,
    appId: `app_${l.repeat(20)}`,
    siteKey: `APP_${l.repeat(24)}`,
    secretKey: `svc_sk_test_${l.repeat(40)}`,
    oldSecrets: [],
    origin: `https://${l}.example`,
    originsEver: new Set([`https://${l}.example`]),
    keys: [{ id: `ak_${l}`, key: `svc_ak_${l.repeat(40)}`, scopes: ['consents:read'] }],
    noticeIds: [`ntc_${l}`],
    triggerKeys: ['signup'],
    purposes: ['analytics'],
    principals: [
      {
        referenceId: `SVC-REF-${label.repeat(8)}`,
        userId: `user-${l}`,
        email: `${l}@x.example`,
        transactionIds: [`txn-${l}-0000`],
        recordIds: [],
        tokens: [`svc_pt_${l}.sig`],
      },
    ],
    captures: [],
    dispatches: [],
    cursors: [],
    expiredTokens: [],
    tenant: true,
  };
}

const world = new World('http://x', ADMIN, 'http://x/hook', () => undefined);
const A = tenant('A');
const B = tenant('B');
world.apps.push(A, B);

const routes = routesOf({
  paths: {
    '/api/v1/consents/{userId}': { get: { security: [{ apiKey: [] }] } },
    '/api/public/consents/my-transactions/{transactionId}': {
      get: { security: [{ secretKey: [] }, { siteKey: [] }] },
    },
  },
});
const route = (key: string) => routes.find((r) => r.key === key) as Route;

function req(
  r: Route,
  url: string,
  headers: Record<string, string>,
  params: Record<string, string> = {},
): FuzzRequest {
  return {
    index: 0,
    route: r,
    target: r,
    method: r.method,
    url,
    headers,
    body: undefined,
    bodyText: undefined,
    plan: 'right',
    creds: [],
    notes: [],
    params,
    actor: A,
  };
}

function answer(status: number, body: unknown, type = 'application/json'): Answer {
  const text = JSON.stringify(body);
  return { status, headers: { 'content-type': type }, body: Buffer.from(text), text, ms: 1 };
}

const kinds = (r: FuzzRequest, a: Answer) => check(r, a, world, Date.now()).map((f) => f.kind);
const get = route('GET /api/v1/consents/{userId}');
const txn = route('GET /api/public/consents/my-transactions/{transactionId}');
const keyA = { authorization: `Bearer ${A.keys[0]!.key}` };

describe('fuzz oracle', () => {
  it('passes a 2xx that shows only the caller’s own data', () => {
    expect(
      kinds(
        req(get, '/api/v1/consents/user-a', keyA, { userId: 'user-a' }),
        answer(200, { userId: 'user-a', referenceId: A.principals[0]!.referenceId }),
      ),
    ).toEqual([]);
  });

  it('fails an answer that shows another app’s data, but not an echo of the request', () => {
    const leak = answer(200, { userId: 'user-a', referenceId: B.principals[0]!.referenceId });
    expect(kinds(req(get, '/api/v1/consents/user-a', keyA, { userId: 'user-a' }), leak)).toContain(
      'leak',
    );
    const echo = answer(
      404,
      { code: 'SVC_NOT_FOUND', status: 404, instance: '/api/v1/consents/user-b' },
      'application/problem+json',
    );
    expect(kinds(req(get, '/api/v1/consents/user-b', keyA, { userId: 'user-b' }), echo)).toEqual(
      [],
    );
  });

  it('never lets a secret key or API key be shown, even to its own app', () => {
    expect(
      kinds(req(get, '/api/v1/consents/user-a', keyA), answer(200, { secret: A.secretKey })),
    ).toContain('leak');
  });

  it('fails a 2xx for another app’s id, and one without a credential the route accepts', () => {
    const foreign = req(
      txn,
      `/api/public/consents/my-transactions/txn-b-0000`,
      { 'x-secret-key': A.secretKey },
      { transactionId: 'txn-b-0000' },
    );
    expect(kinds(foreign, answer(200, {}))).toContain('foreign-id');
    const secretAsBearer = req(get, '/api/v1/consents/user-a', {
      authorization: `Bearer ${B.secretKey}`,
    });
    expect(kinds(secretAsBearer, answer(200, {}))).toContain('auth-bypass');
    const siteKeyOnly = req(txn, '/api/public/consents/my-transactions/x', {
      'x-site-key': A.siteKey,
      origin: A.origin,
    });
    expect(kinds(siteKeyOnly, answer(200, {}))).toContain('auth-bypass');
    const withToken = {
      ...siteKeyOnly,
      headers: { ...siteKeyOnly.headers, authorization: `Bearer ${A.principals[0]!.tokens[0]!}` },
    };
    expect(kinds(withToken, answer(200, {}))).toEqual([]);
  });

  it('fails any 5xx, and an error that is not problem+json with a SVC_ code and its status', () => {
    const r = req(get, '/api/v1/consents/x', keyA);
    expect(
      kinds(r, answer(503, { code: 'SVC_UNAVAILABLE', status: 503 }, 'application/problem+json')),
    ).toEqual(['server-error']);
    expect(kinds(r, answer(400, { error: 'bad' }))).toEqual(['not-problem']);
    expect(
      kinds(r, answer(404, { code: 'NOT_FOUND', status: 404 }, 'application/problem+json')),
    ).toEqual(['not-problem']);
    expect(
      kinds(r, answer(404, { code: 'SVC_NOT_FOUND', status: 400 }, 'application/problem+json')),
    ).toEqual(['not-problem']);
    expect(
      kinds(
        r,
        answer(
          422,
          { code: 'SVC_VALIDATION_FAILED', status: 422 },
          'application/problem+json; charset=utf-8',
        ),
      ),
    ).toEqual([]);
  });
});
