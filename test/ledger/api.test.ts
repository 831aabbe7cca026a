import { createHash } from 'node:crypto';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { encodeCursor } from '../../services/ledger/cursor.js';
import { dispatchDetail, dispatchSummary } from '../../services/ledger/schemas.js';
import { dispatchPk } from '../../shared/storage/ledger/dispatches.js';
import { tamperFirstAttempt } from '../helpers/tamper.js';
import {
  allPages,
  startLedgerProcess,
  type LedgerApp,
  type LedgerFixture,
  type Reply,
} from './fixture.js';

/**
 * The auditors' ledger API over dispatches made for real: consents recorded through the record
 * API, delivered by the dispatcher to a loopback receiver. App A gets 10 dispatches before the
 * instant `t1` and 5 after (one of them a withdrawal); app B gets 2.
 */

let f: LedgerFixture;
let a: LedgerApp;
let b: LedgerApp;
let t1: string;
const refs: string[] = [];
/** A's dispatches as the full listing returns them. */
let all: { dispatchId: string; createdAt: string; referenceId: string; event: string }[];

const LIST = '/api/v1/ledger/dispatches';
const list = (key: string, query = '') => f.call('GET', `${LIST}?${query}`, { key });
const ids = (r: Reply) => r.body.items.map((d: { dispatchId: string }) => d.dispatchId) as string[];

beforeAll(async () => {
  f = await startLedgerProcess('ledger-api');
  [a, b] = [await f.createApp('a'), await f.createApp('b')];
  for (let i = 1; i <= 5; i++) refs.push(await f.consent(a, `user-${i}`, { marketing: true }));
  await f.consent(b, 'user-b', { marketing: true });
  await f.settle(a, 10);
  t1 = new Date().toISOString();
  // Every later event is created strictly after t1 (same clock, next millisecond at least).
  await vi.waitFor(() => expect(Date.now()).toBeGreaterThan(Date.parse(t1)));
  refs.push(await f.consent(a, 'user-6', { marketing: true }));
  refs.push(await f.consent(a, 'user-7', { marketing: true }));
  const put = await f.call('PUT', '/api/v1/consents/user-1', {
    key: a.writer,
    body: { consents: { marketing: false } },
  });
  expect(put.status, put.text).toBe(200);
  await f.settle(a, 15);
  await f.settle(b, 2);
  all = (await list(a.auditor, 'limit=200')).body.items;
}, 90_000);
afterAll(async () => {
  await f?.close();
});

describe('GET /api/v1/ledger/dispatches', () => {
  it('lists every dispatch of the key’s app, oldest first, in the API shape', async () => {
    const r = await list(a.auditor);
    expect(r.status).toBe(200);
    expect(r.body.nextCursor).toBeNull();
    expect(new Set(ids(r))).toEqual(new Set(f.delivered(a)));
    expect(ids(r)).toHaveLength(15);
    const keys = all.map((d) => `${d.createdAt}#${d.dispatchId}`);
    expect(keys).toEqual([...keys].sort());
    for (const d of r.body.items) {
      // Strict: no storage keys, no webhook body, nothing beyond the documented fields.
      expect(dispatchSummary.strict().safeParse(d).error).toBeUndefined();
      expect(d).toMatchObject({ appId: a.appId, deliveryStatus: 'delivered', attemptCount: 1 });
    }
    expect(all.filter((d) => d.event === 'consent.withdrawn')).toEqual([
      expect.objectContaining({ referenceId: refs[0], postbackRequired: true }),
    ]);
  });

  it('pages with a cursor: no duplicates, no gaps, the order of the full listing', async () => {
    const pages = await allPages(f, a.auditor, 'limit=4');
    expect(pages.map((p) => p.ids.length)).toEqual([4, 4, 4, 3]);
    expect(pages.flatMap((p) => p.ids)).toEqual(all.map((d) => d.dispatchId));
    const fives = await allPages(f, a.auditor, 'limit=5');
    expect(fives.flatMap((p) => p.ids)).toEqual(all.map((d) => d.dispatchId));
    expect(fives.slice(0, 3).every((p) => p.ids.length === 5)).toBe(true);
  });

  it('filters by referenceId, event and time range', async () => {
    const mine = await list(a.auditor, `referenceId=${refs[0]}`);
    expect(ids(mine)).toEqual(
      all.filter((d) => d.referenceId === refs[0]).map((d) => d.dispatchId),
    );
    expect(mine.body.items.map((d: { event: string }) => d.event).sort()).toEqual([
      'consent.created',
      'consent.granted',
      'consent.withdrawn',
    ]);
    const withdrawn = await list(a.auditor, 'event=consent.withdrawn');
    expect(withdrawn.body.items.map((d: { referenceId: string }) => d.referenceId)).toEqual([
      refs[0],
    ]);
    const before = all.filter((d) => d.createdAt < t1).map((d) => d.dispatchId);
    const after = all.filter((d) => d.createdAt >= t1).map((d) => d.dispatchId);
    expect([before.length, after.length]).toEqual([10, 5]);
    expect(ids(await list(a.auditor, `from=${t1}`))).toEqual(after);
    expect(ids(await list(a.auditor, `to=${t1}`))).toEqual(before);
    // `to` is exclusive: ending at the first later event's own time leaves it out.
    const first = all.find((d) => d.createdAt >= t1)!;
    const upTo = await list(a.auditor, `from=${t1}&to=${first.createdAt}`);
    expect(ids(upTo)).toEqual([]);
    // By principal and time range together (gsi2 key condition).
    const r1After = await list(a.auditor, `referenceId=${refs[0]}&from=${t1}`);
    expect(r1After.body.items.map((d: { event: string }) => d.event)).toEqual([
      'consent.withdrawn',
    ]);
    expect(ids(await list(a.auditor, `referenceId=${refs[5]}&to=${t1}`))).toEqual([]);
    // A date means midnight UTC: from the first event's date on, everything is listed.
    const day = all[0]!.createdAt.slice(0, 10);
    expect(ids(await list(a.auditor, `from=${day}&limit=200`))).toHaveLength(15);
  });

  it('filters by flag (none = no flag yet), paging past items that do not match', async () => {
    const first = all[0]!.dispatchId;
    const last = all[all.length - 1]!.dispatchId;
    // As the compliance worker would set them (the ledger API only reads them).
    for (const [id, flag] of [
      [first, 'ok'],
      [last, 'breach'],
    ] as const)
      await f.p.rt.dynamo.doc.send(
        new UpdateCommand({
          TableName: f.p.rt.tables.ledger,
          Key: { pk: dispatchPk(id), sk: 'DSP' },
          UpdateExpression: 'SET complianceFlag = :f',
          ExpressionAttributeValues: { ':f': flag },
        }),
      );
    // The one breach is the last of 15: a page of one still finds it, and ends the listing.
    const breach = await list(a.auditor, 'flag=breach&limit=1');
    expect(ids(breach)).toEqual([last]);
    expect(breach.body.items[0].complianceFlag).toBe('breach');
    expect(breach.body.nextCursor).toBeNull();
    expect(ids(await list(a.auditor, 'flag=ok'))).toEqual([first]);
    expect(ids(await list(a.auditor, 'flag=critical'))).toEqual([]);
    const none = await allPages(f, a.auditor, 'flag=none&limit=4');
    expect(none.flatMap((p) => p.ids)).toEqual(all.slice(1, -1).map((d) => d.dispatchId));
    expect(none.slice(0, -1).every((p) => p.ids.length === 4)).toBe(true);
    // Flag, event and time range together: the last event is the withdrawal (made last).
    expect(all[all.length - 1]!.event).toBe('consent.withdrawn');
    const q = (more: string) => list(a.auditor, `flag=breach&${more}`).then(ids);
    expect(await q(`from=${t1}&event=consent.withdrawn`)).toEqual([last]);
    expect(await q(`from=${t1}&event=consent.granted`)).toEqual([]);
    expect(await q(`to=${t1}&event=consent.withdrawn`)).toEqual([]);
  });

  it('refuses a cursor used with other filters, by another app, or made up (422 /cursor)', async () => {
    const page = await list(a.auditor, 'limit=2');
    const cursor = encodeURIComponent(page.body.nextCursor);
    expect(ids(await list(a.auditor, `limit=2&cursor=${cursor}`))).toEqual(
      all.slice(2, 4).map((d) => d.dispatchId),
    );
    for (const [key, query] of [
      [a.auditor, `event=consent.granted&cursor=${cursor}`],
      [a.auditor, `from=${t1}&cursor=${cursor}`],
      [a.auditor, `flag=none&cursor=${cursor}`],
      [b.auditor, `cursor=${cursor}`],
      [a.auditor, 'cursor=not-a-cursor'],
      [a.auditor, `cursor=${Buffer.from('{"v":1}').toString('base64url')}`],
      // Bound to B's query but pointing into A's partition: still refused.
      [
        b.auditor,
        `cursor=${encodeCursor({ appId: b.appId }, { pk: dispatchPk(all[0]!.dispatchId), sk: 'DSP', gsi1pk: `APP#${a.appId}`, gsi1sk: `${all[0]!.createdAt}#${all[0]!.dispatchId}` })}`,
      ],
    ] as const) {
      const r = await list(key, query);
      expect(r.status, query).toBe(422);
      expect(r.body).toMatchObject({
        code: 'SVC_VALIDATION_FAILED',
        errors: [{ path: '/cursor' }],
      });
    }
  });

  it('answers 422 naming every bad parameter', async () => {
    const r = await list(
      a.auditor,
      'limit=0&flag=bad&event=consent.nope&from=yesterday&referenceId=SVC-REF-1',
    );
    expect(r.status).toBe(422);
    expect(r.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect(r.body.errors.map((e: { path: string }) => e.path).sort()).toEqual([
      '/event',
      '/flag',
      '/from',
      '/limit',
      '/referenceId',
    ]);
    for (const [query, path] of [
      ['limit=201', '/limit'],
      ['limit=x', '/limit'],
      [`from=${t1}&to=${t1}`, '/to'],
      ['to=2026-13-01', '/to'],
      ['from=2026-01-01T00:00:00', '/from'],
    ])
      expect((await list(a.auditor, query)).body.errors, query).toEqual([
        expect.objectContaining({ path }),
      ]);
    const unknown = await list(a.auditor, 'form=2026-01-01');
    expect(unknown.status).toBe(422);
    expect(JSON.stringify(unknown.body.errors)).toContain('form');
  });
});

describe('GET /api/v1/ledger/dispatches/{dispatchId}', () => {
  it('returns the dispatch with its attempts, matching what the receiver got', async () => {
    const id = all.find((d) => d.event === 'consent.withdrawn')!.dispatchId;
    const r = await f.call('GET', `${LIST}/${id}`, { key: a.auditor });
    expect(r.status).toBe(200);
    expect(dispatchDetail.strict().safeParse(r.body).error).toBeUndefined();
    const got = f.rcv.at(a.hookPath).find((x) => x.headers['x-svc-dispatch-id'] === id)!;
    expect(r.body).toMatchObject({
      dispatchId: id,
      eventId: JSON.parse(got.body).id,
      event: 'consent.withdrawn',
      appId: a.appId,
      referenceId: refs[0],
      deliveryStatus: 'delivered',
      postbackRequired: true,
      postbackDueAt: JSON.parse(got.body).data.postback.dueAt,
      bodySha256: createHash('sha256').update(got.body).digest('hex'),
      postbacks: [],
      flagHistory: [],
    });
    expect(r.body.attempts).toEqual([
      expect.objectContaining({
        attempt: 1,
        outcome: 'delivered',
        statusCode: 200,
        trigger: 'first',
      }),
    ]);
    expect(r.body.headHash).toBe(r.body.attempts[0].hash);
    expect(r.text).not.toContain('"body"');
  });

  it('answers 404 for an unknown id, a malformed id and another app’s dispatch', async () => {
    for (const id of ['dsp_01ARZ3NDEKTSV4RRFFQ69G5FAV', 'nope', all[0]!.dispatchId]) {
      const key = id === all[0]!.dispatchId ? b.auditor : a.auditor;
      for (const path of [`${LIST}/${id}`, `${LIST}/${id}/verify`]) {
        const r = await f.call('GET', path, { key });
        expect(r.status, path).toBe(404);
        expect(r.body.code).toBe('SVC_NOT_FOUND');
      }
    }
  });
});

describe('GET /api/v1/ledger/dispatches/{dispatchId}/verify', () => {
  it('confirms an intact chain and finds a tampered attempt', async () => {
    const id = all[3]!.dispatchId;
    const ok = await f.call('GET', `${LIST}/${id}/verify`, { key: a.auditor });
    const detail = await f.call('GET', `${LIST}/${id}`, { key: a.auditor });
    // No checkpoint worker runs here: nothing sealed yet, which is not a failure.
    expect(ok.body).toEqual({
      dispatchId: id,
      ok: true,
      entries: 2,
      headHash: detail.body.headHash,
      failures: [],
      seal: null,
    });

    await tamperFirstAttempt(f.p.rt, id, 'statusCode', 204);
    const broken = await f.call('GET', `${LIST}/${id}/verify`, { key: a.auditor });
    expect(broken.status).toBe(200);
    expect(broken.body).toEqual({
      dispatchId: id,
      ok: false,
      entries: 2,
      headHash: detail.body.headHash,
      brokenAt: 'ATT#001',
      reason: expect.any(String),
      failures: [
        { dispatchId: id, at: 'attempts[0]', reason: 'chain broken: hash does not match' },
      ],
      seal: null,
    });
  });
});

describe('authentication and isolation', () => {
  const routes = () => [
    `${LIST}`,
    `${LIST}/${all[0]!.dispatchId}`,
    `${LIST}/${all[0]!.dispatchId}/verify`,
    `/api/v1/ledger/export?from=${t1.slice(0, 10)}&to=2099-01-01`,
    `/api/v1/ledger/verify?from=${t1.slice(0, 10)}&to=2099-01-01`,
  ];

  it('needs an API key (401) holding ledger:read (403) on every route', async () => {
    for (const path of routes()) {
      expect((await f.call('GET', path)).status, path).toBe(401);
      expect((await f.call('GET', path, { key: 'svc_ak_' + 'x'.repeat(40) })).status).toBe(401);
      const r = await f.call('GET', path, { key: a.reader });
      expect(r.status, path).toBe(403);
      expect(r.body.code).toBe('SVC_FORBIDDEN');
      expect((await f.call('GET', path, { key: a.writer })).status, path).toBe(403);
    }
  });

  it('never shows app B’s key anything of app A', async () => {
    const bList = await list(b.auditor, 'limit=200');
    expect(new Set(ids(bList))).toEqual(new Set(f.delivered(b)));
    expect(ids(bList)).toHaveLength(2);
    expect(ids(await list(b.auditor, `referenceId=${refs[0]}`))).toEqual([]);
    expect(ids(await list(b.auditor, 'event=consent.withdrawn'))).toEqual([]);
    for (const d of all.slice(0, 3)) {
      expect((await f.call('GET', `${LIST}/${d.dispatchId}`, { key: b.auditor })).status).toBe(404);
      expect(
        (await f.call('GET', `${LIST}/${d.dispatchId}/verify`, { key: b.auditor })).status,
      ).toBe(404);
    }
    const exp = await f.call('GET', '/api/v1/ledger/export?from=2020-01-01&to=2020-01-31', {
      key: b.auditor,
    });
    expect(exp.status).toBe(200);
    expect(exp.text.split('\n')).toHaveLength(2);
    expect(JSON.parse(exp.text)).toMatchObject({
      type: 'summary',
      count: 0,
      checkpoints: 0,
      from: '2020-01-01T00:00:00.000Z',
      to: '2020-01-31T00:00:00.000Z',
    });
    const from = new Date(Date.now() - 86_400_000).toISOString();
    const to = new Date(Date.now() + 86_400_000).toISOString();
    const bExport = await f.call('GET', `/api/v1/ledger/export?from=${from}&to=${to}`, {
      key: b.auditor,
    });
    const lines = bExport.text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.filter((l) => l.type === 'dispatch').map((l) => l.appId)).toEqual([
      b.appId,
      b.appId,
    ]);
  });
});
