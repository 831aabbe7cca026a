import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  consentEventSchema,
  getTransaction,
  type ConsentEvent,
} from '../../shared/domain/consent/index.js';
import { portalLink } from '../../shared/portal/index.js';
import { startPortalStack, type PortalApp, type PortalStack, type Principal } from './fixture.js';

let s: PortalStack;
let shop: PortalApp;
let other: PortalApp;
let alice: Principal;
let bob: Principal;
let carol: Principal; // of the other app

beforeAll(async () => {
  s = await startPortalStack('portal-http');
  shop = await s.createApp();
  other = await s.createApp({ name: 'Other' });
  alice = await s.createPrincipal(shop);
  bob = await s.createPrincipal(shop);
  carol = await s.createPrincipal(other);
});

afterAll(async () => {
  await s?.close();
});

/** The page as a browser requests it: the fragment (#token=…) never leaves the browser. */
const portal = (ref: string, query = '') => fetch(`${s.url}/portal/${ref}${query}`);

async function api(method: string, ref: string, path: string, token: string | undefined) {
  const r = await fetch(`${s.url}/portal/api/${ref}${path}`, {
    method,
    headers: token === undefined ? {} : { authorization: `Portal ${token}` },
  });
  const text = await r.text();
  expect(r.status, text).toBeLessThan(500);
  return { status: r.status, headers: r.headers, body: text ? JSON.parse(text) : undefined };
}

function eventsOf(ref: string, type: ConsentEvent['type']): ConsentEvent[] {
  return s.events
    .map((m) => consentEventSchema.safeParse(m.value))
    .flatMap((r) => (r.success ? [r.data] : []))
    .filter((e) => e.data.referenceId === ref && e.type === type);
}

const waitForEvent = (ref: string, type: ConsentEvent['type'], recordId: string) =>
  vi.waitFor(
    () => {
      const e = eventsOf(ref, type).find((x) => x.data.recordIds.includes(recordId));
      expect(e).toBeDefined();
      return e!;
    },
    { timeout: 15_000, interval: 50 },
  );

describe('the portal page', () => {
  it('is linked with the token in the fragment and served as the same data-free page for everyone, under a strict CSP', async () => {
    const link = portalLink(s.p.rt.config, shop.app, alice.referenceId, new Date());
    expect(link.startsWith(`${s.url}/portal/${alice.referenceId}#token=svc_pt_`)).toBe(true);
    const r = await fetch(link); // fetch, like a browser, sends no fragment
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^text\/html/);
    const csp = r.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).toContain("frame-ancestors 'none'");
    expect(r.headers.get('referrer-policy')).toBe('no-referrer');
    expect(r.headers.get('cache-control')).toBe('no-store');
    const html = await r.text();
    expect(html).toContain(alice.referenceId);
    // Nothing the server looked up: the app's name and contact come from the API, with the token.
    expect(html).not.toContain('Shop');
    expect(html).not.toContain('dpo@shop.example');
    expect(html).toMatch(/<script src="\/portal\/assets\/portal\.js" defer><\/script>/);
    expect(html).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>/); // every script is a file
    expect(html).not.toMatch(/<style|\sstyle=|\son[a-z]+=/i); // no inline style or handlers
    expect(html).toMatch(/<html lang="en" dir="ltr">/);
    expect(html).toMatch(/role="status" aria-live="polite"/);
  });

  it('serves its script (transpiled, browser-ready) and stylesheet', async () => {
    const js = await fetch(`${s.url}/portal/assets/portal.js`);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect(js.headers.get('x-content-type-options')).toBe('nosniff');
    const code = await js.text();
    expect(code).toContain('Portal ');
    expect(code).not.toMatch(/^\s*(import|export)\s/m);
    expect(() => new Function(code)).not.toThrow(); // plain JavaScript, no TypeScript left
    const css = await fetch(`${s.url}/portal/assets/portal.css`);
    expect(css.status).toBe(200);
    expect(css.headers.get('content-type')).toMatch(/^text\/css/);
    expect((await fetch(`${s.url}/portal/assets/other.js`)).status).toBe(404);
  });

  it('refuses a link with the token in the query string (an old link), valid or not', async () => {
    const good = s.tokenFor(shop.app.appId, alice.referenceId);
    for (const query of [`?token=${encodeURIComponent(good)}`, '?token=x', '?token=']) {
      const r = await portal(alice.referenceId, query);
      expect(r.status, query).toBe(400);
      expect(r.headers.get('content-security-policy')).toContain("default-src 'none'");
      const html = await r.text();
      expect(html).toContain('no longer accepted');
      expect(html).not.toContain(alice.referenceId);
      expect(html).not.toContain('portal.js');
    }
  });

  it.each([
    ['no token', undefined, 401, 'SVC_UNAUTHORIZED'],
    ['an expired token', 'expired', 401, 'SVC_UNAUTHORIZED'],
    ['a tampered token', 'tampered', 403, 'SVC_FORBIDDEN'],
    ['garbage', 'garbage', 403, 'SVC_FORBIDDEN'],
    ["another principal's token", 'bob', 403, 'SVC_FORBIDDEN'],
  ])('its session call answers %s with %i (%#)', async (_n, kind, status, code) => {
    const good = s.tokenFor(shop.app.appId, alice.referenceId);
    const token =
      kind === undefined
        ? undefined
        : {
            expired: s.tokenFor(shop.app.appId, alice.referenceId, -1000),
            tampered: `${good.slice(0, -12)}${good.at(-12) === 'A' ? 'B' : 'A'}${good.slice(-11)}`,
            garbage: 'svc_pt_eyJhIjoxfQ.c2lnbmF0dXJl',
            bob: s.tokenFor(shop.app.appId, bob.referenceId),
          }[kind];
    const r = await api('GET', alice.referenceId, '/session', token);
    expect(r.status).toBe(status);
    expect(r.body.code).toBe(code);
    expect(JSON.stringify(r.body)).not.toContain('Shop');
  });
});

describe('the portal API', () => {
  it('tells whose link it is, and lists only the principal’s transactions', async () => {
    const token = s.tokenFor(shop.app.appId, alice.referenceId);
    const session = await api('GET', alice.referenceId, '/session', token);
    expect(session.status).toBe(200);
    expect(session.body).toEqual({
      referenceId: alice.referenceId,
      expiresAt: expect.any(String),
      app: { name: 'Shop & Co', contactEmail: 'dpo@shop.example' },
    });
    const r = await api('GET', alice.referenceId, '/transactions', token);
    expect(r.status).toBe(200);
    expect(r.headers.get('cache-control')).toBe('no-store');
    expect(r.body.items.map((t: { transactionId: string }) => t.transactionId)).toEqual([
      alice.transaction.transactionId,
    ]);
    expect(r.body.nextCursor).toBeNull();
    // Never in the query string: refused, with or without a valid header beside it.
    const inQuery = `/portal/api/${alice.referenceId}/transactions?token=${encodeURIComponent(token)}`;
    const q = await fetch(`${s.url}${inQuery}`);
    expect(q.status).toBe(422);
    const both = await fetch(`${s.url}${inQuery}`, {
      headers: { authorization: `Portal ${token}` },
    });
    expect(both.status).toBe(422);
    // The refusal does not echo the token back either (its `instance` is the path alone).
    const problem = (await both.json()) as { instance?: string };
    expect(problem.instance).toBe(`/portal/api/${alice.referenceId}/transactions`);
    expect(JSON.stringify(problem)).not.toContain(token.slice(7, 40));
  });

  it('revokes, grants and erases a record through the consent domain, with events', async () => {
    const token = s.tokenFor(shop.app.appId, alice.referenceId);
    const rec = alice.records.marketing!;
    const revoked = await api('POST', alice.referenceId, `/records/${rec}/revoke`, token);
    expect(revoked.status).toBe(200);
    expect(revoked.body.status).toBe('partially_revoked');
    const stored = await getTransaction(s.p.rt, shop.app.appId, alice.transaction.transactionId);
    expect(stored?.records.find((r) => r.recordId === rec)?.state).toBe('revoked');
    const withdrawn = await waitForEvent(alice.referenceId, 'consent.withdrawn', rec);
    expect(withdrawn.appId).toBe(shop.app.appId);
    expect(withdrawn.data.purposes).toEqual({ marketing: false });
    expect(withdrawn.data.postback?.required).toBe(true);

    // The history (kept in the transaction items) records the principal acting through the
    // portal.
    const txns = await s.p.rt.dynamo.doc.send(
      new QueryCommand({
        TableName: s.p.rt.tables.entities,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :t)',
        ExpressionAttributeValues: {
          ':pk': `APP#${shop.app.appId}#REF#${alice.referenceId}`,
          ':t': 'TXN#',
        },
        ConsistentRead: true,
      }),
    );
    const hist = (txns.Items ?? []).flatMap((t) => (t.history ?? []) as Record<string, unknown>[]);
    const last = hist.find((i) => i.recordId === rec && i.to === 'revoked');
    expect(last?.who).toEqual({ source: 'portal', credential: 'principalToken' });

    const granted = await api('POST', alice.referenceId, `/records/${rec}/grant`, token);
    expect(granted.body.status).toBe('active');
    await vi.waitFor(
      () => expect(eventsOf(alice.referenceId, 'consent.granted').length).toBeGreaterThanOrEqual(2),
      { timeout: 15_000, interval: 50 },
    );

    const txn = alice.transaction.transactionId;
    const erased = await api('POST', alice.referenceId, `/transactions/${txn}/erase`, token);
    expect(erased.status).toBe(200);
    expect(erased.body.status).toBe('erased');
    await waitForEvent(alice.referenceId, 'data.deleted', rec);
    // That was all of Alice's consent: the link she used ends with it.
    const ended = await api('POST', alice.referenceId, `/transactions/${txn}/grant`, token);
    expect(ended.status).toBe(401);
    expect(ended.body.detail).toBe('The portal link is no longer valid');
    // A link issued since (the erasure acknowledgement's) shows what is left; erased is final.
    const fresh = s.tokenFor(shop.app.appId, alice.referenceId);
    expect((await api('GET', alice.referenceId, '/transactions', fresh)).status).toBe(200);
    const again = await api('POST', alice.referenceId, `/transactions/${txn}/grant`, fresh);
    expect(again.status).toBe(409);
  });

  it('answers 401 for a missing or expired token and 403 for a forged one or another principal’s', async () => {
    const path = '/transactions';
    expect((await api('GET', bob.referenceId, path, undefined)).status).toBe(401);
    const expired = await api(
      'GET',
      bob.referenceId,
      path,
      s.tokenFor(shop.app.appId, bob.referenceId, -1000),
    );
    expect(expired.status).toBe(401);
    expect(expired.body.code).toBe('SVC_UNAUTHORIZED');
    expect(expired.headers.get('www-authenticate')).toBe('Portal');
    const aliceToken = s.tokenFor(shop.app.appId, alice.referenceId);
    const crossed = await api('GET', bob.referenceId, path, aliceToken);
    expect(crossed.status).toBe(403);
    expect(crossed.body.code).toBe('SVC_FORBIDDEN');
    const rec = bob.records.analytics!;
    const crossedWrite = await api('POST', bob.referenceId, `/records/${rec}/revoke`, aliceToken);
    expect(crossedWrite.status).toBe(403);
    const forged = await api('GET', bob.referenceId, path, `${aliceToken}x`);
    expect(forged.status).toBe(403);
    const stored = await getTransaction(s.p.rt, shop.app.appId, bob.transaction.transactionId);
    expect(stored?.records.every((r) => r.state === 'granted')).toBe(true);
  });

  it('never reaches another principal’s or another app’s data', async () => {
    const bobToken = s.tokenFor(shop.app.appId, bob.referenceId);
    // Alice's and Carol's (other app) ids, asked for with Bob's valid token: unknown to him.
    for (const id of [alice.records.analytics!, carol.records.analytics!]) {
      const r = await api('POST', bob.referenceId, `/records/${id}/revoke`, bobToken);
      expect(r.status).toBe(404);
    }
    const carolTxn = carol.transaction.transactionId;
    expect(
      (await api('POST', bob.referenceId, `/transactions/${carolTxn}/erase`, bobToken)).status,
    ).toBe(404);
    expect((await api('GET', bob.referenceId, `/transactions/${carolTxn}`, bobToken)).status).toBe(
      404,
    );
    // A genuine token of the shop naming Carol's referenceId names no principal of the shop.
    const shopCarol = s.tokenFor(shop.app.appId, carol.referenceId);
    const list = await api('GET', carol.referenceId, '/transactions', shopCarol);
    expect(list.status).toBe(401);
    const stored = await getTransaction(s.p.rt, other.app.appId, carolTxn);
    expect(stored?.records.every((r) => r.state === 'granted')).toBe(true);
    // And Carol's own token (the other app) does reach her data.
    const own = await api(
      'GET',
      carol.referenceId,
      '/transactions',
      s.tokenFor(other.app.appId, carol.referenceId),
    );
    expect(own.body.items).toHaveLength(1);
  });
});
