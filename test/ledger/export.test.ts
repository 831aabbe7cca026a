import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { dispatchDetail } from '../../services/ledger/schemas.js';
import { exportDispatches, readDispatchPage, type IndexKey } from '../../shared/ledger/export.js';
import { startLedgerProcess, type LedgerApp, type LedgerFixture } from './fixture.js';

/** The NDJSON export and the paging helpers under it, over dispatches made for real. */

let f: LedgerFixture;
let a: LedgerApp;
let t1: string;
let all: { dispatchId: string; createdAt: string; event: string }[];
const DAY = 86_400_000;

const exportUrl = (from: string, to: string) =>
  `/api/v1/ledger/export?from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`;
const iso = (ms: number) => new Date(ms).toISOString();

function lines(text: string) {
  expect(text.endsWith('\n')).toBe(true);
  return text
    .slice(0, -1)
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

beforeAll(async () => {
  f = await startLedgerProcess('ledger-export');
  a = await f.createApp('export');
  for (let i = 1; i <= 4; i++) await f.consent(a, `user-${i}`, { marketing: true });
  await f.settle(a, 8);
  t1 = new Date().toISOString();
  await vi.waitFor(() => expect(Date.now()).toBeGreaterThan(Date.parse(t1)));
  for (let i = 5; i <= 6; i++) await f.consent(a, `user-${i}`, { marketing: true });
  await f.settle(a, 12);
  all = (await f.call('GET', '/api/v1/ledger/dispatches?limit=200', { key: a.auditor })).body.items;
}, 90_000);
afterAll(async () => {
  await f?.close();
});

describe('GET /api/v1/ledger/export', () => {
  it('streams one parseable line per dispatch with its entries, then a summary', async () => {
    const from = iso(Date.now() - DAY);
    const to = iso(Date.now() + DAY);
    const r = await f.call('GET', exportUrl(from, to), { key: a.auditor });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^application\/x-ndjson/);
    expect(r.headers.get('content-disposition')).toMatch(/^attachment; filename="ledger-app_/);
    const got = lines(r.text);
    expect(got).toHaveLength(13);
    // No checkpoint worker runs here: no checkpoint lines, and the signed summary says so.
    expect(got.at(-1)).toEqual({
      type: 'summary',
      v: 1,
      appId: a.appId,
      from,
      to,
      count: 12,
      checkpoints: 0,
      grievances: 0,
      breaches: 0,
      exportedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      lastCheckpoint: null,
      keyId: expect.any(String),
      signature: expect.any(String),
    });
    const dispatches = got.slice(0, -1);
    expect(dispatches.map((l) => l.dispatchId)).toEqual(all.map((d) => d.dispatchId));
    for (const l of dispatches) {
      const { type, ...d } = l;
      expect(type).toBe('dispatch');
      expect(dispatchDetail.strict().safeParse(d).error).toBeUndefined();
      expect((d.attempts as unknown[]).length).toBe(1);
    }
    // A line is the dispatch exactly as the single-dispatch route shows it.
    const one = await f.call('GET', `/api/v1/ledger/dispatches/${all[5]!.dispatchId}`, {
      key: a.auditor,
    });
    expect(dispatches[5]).toEqual({ type: 'dispatch', ...one.body });
  });

  it('exports only the range: from inclusive, to exclusive', async () => {
    const after = lines(
      (await f.call('GET', exportUrl(t1, iso(Date.now() + DAY)), { key: a.auditor })).text,
    );
    expect(after.slice(0, -1).map((l) => l.dispatchId)).toEqual(
      all.filter((d) => d.createdAt >= t1).map((d) => d.dispatchId),
    );
    expect(after.at(-1)).toMatchObject({ type: 'summary', count: 4 });
    const before = lines(
      (await f.call('GET', exportUrl(iso(Date.now() - DAY), t1), { key: a.auditor })).text,
    );
    expect(before.at(-1)).toMatchObject({ type: 'summary', count: 8 });
    const exactlyFirst = all[0]!.createdAt;
    const none = lines(
      (
        await f.call('GET', exportUrl(iso(Date.parse(exactlyFirst) - DAY), exactlyFirst), {
          key: a.auditor,
        })
      ).text,
    );
    expect(none).toEqual([expect.objectContaining({ type: 'summary', count: 0 })]);
  });

  it('refuses a missing, reversed or longer than 31 days range (422 with paths)', async () => {
    const cases: [string, string[]][] = [
      ['/api/v1/ledger/export', ['/from', '/to']],
      ['/api/v1/ledger/export?from=2026-01-01', ['/to']],
      [exportUrl('2026-01-01', '2026-02-01T00:00:00.001Z'), ['/to']],
      [exportUrl('2026-02-01', '2026-01-01'), ['/to']],
      [exportUrl('2026-02-01', 'soon'), ['/to']],
      [`${exportUrl('2026-01-01', '2026-01-02')}&limit=5`, ['/']],
    ];
    for (const [url, paths] of cases) {
      const r = await f.call('GET', url, { key: a.auditor });
      expect(r.status, url).toBe(422);
      expect(r.headers.get('content-type')).toMatch(/problem\+json/);
      expect(r.body.errors.map((e: { path: string }) => e.path).sort(), url).toEqual(paths);
    }
    // Exactly 31 days is allowed.
    const ok = await f.call('GET', exportUrl('2026-01-01', '2026-02-01'), { key: a.auditor });
    expect(ok.status).toBe(200);
  });
});

describe('ledger paging helpers', () => {
  it('bounds the work of a sparse filter per page, and resumes without gaps', async () => {
    const rt = f.p.rt;
    const q = { appId: a.appId, event: 'consent.created' };
    const pages: string[][] = [];
    let startKey: IndexKey | undefined;
    do {
      const page = await readDispatchPage(rt, q, { startKey, limit: 10, maxEvaluated: 3 });
      pages.push(page.items.map((i) => String(i.dispatchId)));
      startKey = page.nextKey;
    } while (startKey && pages.length < 50);
    // 12 items evaluated at most 3 per page: never all 6 matches in one page.
    expect(pages.length).toBeGreaterThanOrEqual(4);
    expect(Math.max(...pages.map((p) => p.length))).toBeLessThanOrEqual(3);
    expect(pages.flat()).toEqual(
      all.filter((d) => d.event === 'consent.created').map((d) => d.dispatchId),
    );
  });

  it('exports page after page in index order', async () => {
    const seen: string[] = [];
    for await (const d of exportDispatches(
      f.p.rt,
      { appId: a.appId, from: iso(Date.now() - DAY), to: iso(Date.now() + DAY) },
      { pageSize: 5 },
    ))
      seen.push(d.dispatchId);
    expect(seen).toEqual(all.map((d) => d.dispatchId));
  });

  it('stops between pages once aborted', async () => {
    const ac = new AbortController();
    const seen: string[] = [];
    for await (const d of exportDispatches(
      f.p.rt,
      { appId: a.appId, from: iso(Date.now() - DAY), to: iso(Date.now() + DAY) },
      { pageSize: 5, signal: ac.signal },
    )) {
      seen.push(d.dispatchId);
      if (seen.length === 2) ac.abort();
    }
    expect(seen).toEqual(all.slice(0, 2).map((d) => d.dispatchId));
  });
});
