import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { captureConsent } from '../../shared/domain/consent/index.js';
import type { NoticeVersion } from '../../shared/domain/types.js';
import {
  bearer,
  browser,
  secret,
  startConsentProcess,
  type ConsentFixture,
  type Reply,
  type TestApp,
} from './fixture.js';

/**
 * Tenant isolation: app B's credentials can never read or change app A's data, through any
 * endpoint of the record API or the public API. Every case also checks that none of A's
 * stored items changed and that no event was emitted for A. B's browser credentials are its
 * site key with a principal token for one of B's own principals.
 */

let f: ConsentFixture;
let A: TestApp;
let B: TestApp;
const userA = 'shared-user@shop.example';
let a: { referenceId: string; transactionId: string; recordId: string; cursor: string };
let captured: { referenceId: string; transactionId: string };
/** Principal tokens: B's for a principal of B, A's for A's principal. */
let tokenB: string;
let tokenA: string;

const P = '/api/public/consents/my-transactions';

beforeAll(async () => {
  f = await startConsentProcess('consent-isolation');
  const notice = { triggerKey: 'signup', purposes: [{ name: 'analytics' }, { name: 'marketing' }] };
  A = await f.createApp({ notice });
  B = await f.createApp({ notice });
  const created = await f.call('POST', '/api/v1/consents', {
    headers: bearer(A.key),
    body: {
      userId: userA,
      email: 'a@shop.example',
      consents: { analytics: true, marketing: true },
    },
  });
  expect(created.status).toBe(201);
  // A second transaction for A's principal, so A's listing has a cursor to steal.
  const second = await captureConsent(f.p.rt, A.app, A.notice as NoticeVersion, {
    mode: 'silent',
    granted: [],
    language: 'en',
    pageUrl: 'https://shop.example/',
    userAgent: 'vitest',
    ipHash: 'h',
    referenceId: created.body.referenceId,
  });
  expect(second.referenceId).toBe(created.body.referenceId);
  captured = await captureConsent(f.p.rt, A.app, A.notice as NoticeVersion, {
    mode: 'silent',
    granted: [],
    language: 'en',
    pageUrl: 'https://shop.example/',
    userAgent: 'vitest',
    ipHash: 'h',
  });
  const txn = await f.call('GET', `${P}/${created.body.transactionId}`, { headers: secret(A) });
  const page = await f.call('GET', `${P}?referenceId=${created.body.referenceId}&limit=1`, {
    headers: secret(A),
  });
  expect(page.body.nextCursor).toEqual(expect.any(String));
  a = {
    referenceId: created.body.referenceId,
    transactionId: created.body.transactionId,
    recordId: txn.body.records[0].recordId,
    cursor: page.body.nextCursor,
  };
  await f.waitForEvents(a.referenceId, 4);
  await f.waitForEvents(captured.referenceId, 2);
  const ofB = await captureConsent(f.p.rt, B.app, B.notice as NoticeVersion, {
    mode: 'silent',
    granted: [],
    language: 'en',
    pageUrl: 'https://shop.example/',
    userAgent: 'vitest',
    ipHash: 'h',
  });
  tokenB = await f.mintToken(B, ofB.referenceId);
  tokenA = await f.mintToken(A, a.referenceId);
});
afterAll(async () => {
  await f?.close();
});

type Case = [string, () => Promise<Reply>, (r: Reply) => void];

const notFound = (r: Reply) => {
  expect(r.status).toBe(404);
  expect(r.body.code).toBe('SVC_NOT_FOUND');
};

const ops = ['grant', 'revoke', 'erase'] as const;
const asB = (h: 'secret' | 'browser') => (h === 'secret' ? secret(B) : browser(B, tokenB));
/** Naming A's referenceId: B's server finds nothing; B's browser token is for another one. */
const namedA = (h: 'secret' | 'browser', ifSecret: (r: Reply) => void) =>
  h === 'secret'
    ? ifSecret
    : (r: Reply) => {
        expect(r.status).toBe(403);
        expect(r.body.code).toBe('SVC_FORBIDDEN');
      };

const cases: Case[] = [
  [
    'GET /api/v1/consents/{userId}',
    () => f.call('GET', `/api/v1/consents/${userA}`, { headers: bearer(B.key) }),
    notFound,
  ],
  [
    'PUT /api/v1/consents/{userId}',
    () =>
      f.call('PUT', `/api/v1/consents/${userA}`, {
        headers: bearer(B.key),
        body: { consents: { analytics: false } },
      }),
    notFound,
  ],
  [
    'DELETE /api/v1/consents/{userId}',
    () => f.call('DELETE', `/api/v1/consents/${userA}`, { headers: bearer(B.key) }),
    notFound,
  ],
  [
    'POST /api/v1/consents with A’s consentId',
    () =>
      f.call('POST', '/api/v1/consents', {
        headers: bearer(B.key),
        body: {
          userId: 'b-user',
          email: 'b@shop.example',
          consents: {},
          consentId: captured.transactionId,
        },
      }),
    notFound,
  ],
  [
    'POST /api/v1/consents with A’s userId (B’s own namespace)',
    () =>
      f.call('POST', '/api/v1/consents', {
        headers: bearer(B.key),
        body: { userId: userA, email: 'b@shop.example', consents: { analytics: false } },
      }),
    (r) => {
      expect(r.status).toBe(201);
      expect(r.body.referenceId).not.toBe(a.referenceId);
      expect(r.body.consents).toEqual({ analytics: false });
    },
  ],
  ...(['secret', 'browser'] as const).flatMap((h): Case[] => [
    [
      `GET /my-transactions (${h})`,
      () => f.call('GET', `${P}?referenceId=${a.referenceId}`, { headers: asB(h) }),
      namedA(h, (r) => expect(r.body).toEqual({ items: [], nextCursor: null })),
    ],
    [
      `GET /my-transactions with A’s cursor (${h})`,
      () =>
        f.call('GET', `${P}?referenceId=${a.referenceId}&cursor=${a.cursor}`, { headers: asB(h) }),
      namedA(h, (r) => expect(r.status).toBe(422)),
    ],
    [
      `GET /my-transactions/:id (${h})`,
      () => f.call('GET', `${P}/${a.transactionId}`, { headers: asB(h) }),
      notFound,
    ],
    ...ops.map((op): Case => [
      `POST /my-transactions/:id/${op} (${h})`,
      () => f.call('POST', `${P}/${a.transactionId}/${op}`, { headers: asB(h), body: {} }),
      notFound,
    ]),
    ...ops.map((op): Case => [
      `POST /my-transactions/records/:id/${op} (${h})`,
      () => f.call('POST', `${P}/records/${a.recordId}/${op}`, { headers: asB(h), body: {} }),
      notFound,
    ]),
    ...ops.map((op): Case => [
      `POST /my-transactions/bulk/${op} naming A’s ids (${h})`,
      () =>
        f.call('POST', `${P}/bulk/${op}`, {
          headers: asB(h),
          body: {
            referenceId: a.referenceId,
            transactionIds: [a.transactionId, captured.transactionId],
            recordIds: [a.recordId],
          },
        }),
      namedA(h, (r) => {
        expect(r.status).toBe(200);
        expect(
          r.body.results.map((x: { ok: boolean; error?: { code: string } }) => [
            x.ok,
            x.error?.code,
          ]),
        ).toEqual([
          [false, 'SVC_NOT_FOUND'],
          [false, 'SVC_NOT_FOUND'],
          [false, 'SVC_NOT_FOUND'],
        ]);
      }),
    ]),
    ...ops.map((op): Case => [
      `POST /my-transactions/bulk/${op} for all of A’s principal (${h})`,
      () =>
        f.call('POST', `${P}/bulk/${op}`, {
          headers: asB(h),
          body: { referenceId: a.referenceId },
        }),
      namedA(h, (r) => expect(r.body).toEqual({ results: [] })),
    ]),
  ]),
  [
    'POST /my-transactions/:id/erase with A’s own principal token under B’s site key',
    () =>
      f.call('POST', `${P}/${a.transactionId}/erase`, {
        headers: browser(B, tokenA, B.origin),
        body: {},
      }),
    (r) => expect(r.status).toBe(401),
  ],
];

describe('app B can never reach app A’s data', () => {
  it.each(cases)('%s', async (_name, run, check) => {
    const before = await f.itemsOf(A.app.appId);
    const eventsBefore = f.messages.length;
    const r = await run();
    check(r);
    // Nothing of A changed: every stored item is identical, and A got no new event.
    const after = await f.itemsOf(A.app.appId);
    const sort = (x: Record<string, unknown>[]) =>
      [...x].sort((p, q) => `${p.pk}${p.sk}`.localeCompare(`${q.pk}${q.sk}`));
    expect(sort(after.all)).toEqual(sort(before.all));
    // A marker change on A's principal: its event arrives after any event wrongly emitted for
    // that principal before it (one key, one partition), so then we can look.
    const current = await f.call('GET', `/api/v1/consents/${userA}`, { headers: bearer(A.key) });
    const marketing = !current.body.consents.marketing;
    const marker = await f.call('PUT', `/api/v1/consents/${userA}`, {
      headers: bearer(A.key),
      body: { consents: { marketing } },
    });
    expect(marker.status).toBe(200);
    const ofA = () =>
      f.messages
        .slice(eventsBefore)
        .map((m) => m.value as { appId?: string; type: string; data: { purposes: object } })
        .filter((e) => e.appId === A.app.appId);
    await vi.waitFor(() => expect(ofA().length).toBeGreaterThan(0), {
      timeout: 15_000,
      interval: 50,
    });
    expect(ofA().map((e) => [e.type, e.data.purposes])).toEqual([
      [marketing ? 'consent.granted' : 'consent.withdrawn', { marketing }],
    ]);
  });

  it('A’s own credentials still see everything (the cases above are not vacuous)', async () => {
    expect(
      (await f.call('GET', `/api/v1/consents/${userA}`, { headers: bearer(A.key) })).status,
    ).toBe(200);
    expect(
      (await f.call('GET', `${P}/${a.transactionId}`, { headers: browser(A, tokenA) })).status,
    ).toBe(200);
    const list = await f.call('GET', `${P}?referenceId=${a.referenceId}&cursor=${a.cursor}`, {
      headers: secret(A),
    });
    expect(list.status).toBe(200);
    expect(list.body.items).toHaveLength(1);
    const rec = await f.call('POST', `${P}/records/${a.recordId}/revoke`, {
      headers: secret(A),
      body: {},
    });
    expect(rec.status).toBe(200);
  });
});
