import { DeleteCommand, GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { itemBytes } from '../../shared/storage/billing.js';
import {
  appPagesPk,
  PAGE_ENTRIES,
  PAGE_SPAN_MS,
  planPages,
  readAppDispatches,
} from '../../shared/ledger/app-pages.js';
import { currentLeaves, firstDispatchAt } from '../../shared/ledger/checkpoint-store.js';
import { dispatchKey } from '../../shared/ledger/dispatches.js';
import { exportDispatches, readDispatchPage } from '../../shared/ledger/export.js';
import { listDispatchesByApp } from '../../shared/ledger/queries.js';
import type { Runtime } from '../../shared/runtime.js';
import { dispatcherMetrics } from '../../workers/dispatcher/metrics.js';
import { FirstAttemptWriter } from '../../workers/dispatcher/writer.js';
import { deliveredFirstAttempt } from '../dispatch/helpers.js';
import { testRuntime } from '../helpers/stack.js';
import { allPages, startLedgerProcess, type LedgerApp, type LedgerFixture } from './fixture.js';

/**
 * An app's dispatches listed through `gsi1` and listing pages (shared/ledger/app-pages.ts): the
 * dispatcher's fast writer names the dispatches of one app it writes together by one page item
 * instead of a `gsi1` entry each, and every reader of an app's dispatches merges both. Against
 * DynamoDB Local: the writer and the readers; then the real processes over REST.
 */

let rt: Runtime;
beforeAll(async () => {
  rt = await testRuntime('app-pages');
});
afterAll(async () => {
  await rt.close();
});

let apps = 0;
const newApp = () => ({ appId: `app_pages${++apps}`, environment: 'sandbox' as const });
const at = (ms: number) => new Date(ms).toISOString();
const keyOf = (r: { head: Record<string, unknown> }) => String(r.head.gsi1sk);

async function stored(dispatchId: string) {
  const r = await rt.dynamo.doc.send(
    new GetCommand({
      TableName: rt.tables.ledger,
      Key: dispatchKey(dispatchId),
      ConsistentRead: true,
    }),
  );
  return r.Item;
}

async function pagesOf(appId: string) {
  const r = await rt.dynamo.doc.send(
    new QueryCommand({
      TableName: rt.tables.ledger,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': appPagesPk(appId) },
      ConsistentRead: true,
    }),
  );
  return r.Items ?? [];
}

/** One writer, one flush at a time: records written together share a batch. */
const writerOn = (r: Runtime = rt, lingerMs = 25) =>
  new FirstAttemptWriter(r, {
    metrics: dispatcherMetrics(rt.registry),
    log: rt.log,
    maxFlushes: 1,
    lingerMs,
  });

/** `svc_webhook_ledger_paged_total` by item. */
async function pagedCount(): Promise<{ dispatch: number; page: number }> {
  const m = await rt.registry.getSingleMetric('svc_webhook_ledger_paged_total')?.get();
  const of = (item: string) =>
    m?.values.filter((v) => v.labels.item === item).reduce((n, v) => n + v.value, 0) ?? 0;
  return { dispatch: of('dispatch'), page: of('page') };
}

/** Every dispatch of the app, following `readAppDispatches` page by page. */
async function walk(
  appId: string,
  o: { want: number; desc?: boolean; from?: string; to?: string },
) {
  const out: string[] = [];
  let after: string | undefined;
  for (let n = 0; n < 500; n++) {
    const page = await readAppDispatches(rt, { appId, ...o, after });
    out.push(...page.items.map((d) => String(d.gsi1sk)));
    if (!page.next) return out;
    after = page.next.gsi1sk;
  }
  throw new Error('no end');
}

describe('planPages', () => {
  it('groups one app’s dispatches by time, at most 14 and within the span, and keeps gsi1 for a lone one', () => {
    const a = newApp();
    const b = newApp();
    const t0 = Date.parse('2026-11-28T10:00:00.000Z');
    const heads = [
      ...Array.from({ length: 16 }, (_, i) => deliveredFirstAttempt(rt, a, at(t0 + i)).head),
      deliveredFirstAttempt(rt, a, at(t0 + 5_000)).head, // alone in its span
      deliveredFirstAttempt(rt, b, at(t0)).head,
      deliveredFirstAttempt(rt, b, at(t0 + PAGE_SPAN_MS - 1)).head,
      deliveredFirstAttempt(rt, b, at(t0 + PAGE_SPAN_MS + 10)).head, // past b's first page
    ];
    const plan = planPages(heads);
    const byPk = (pk: string) => plan.pages.filter((p) => p.pk === pk);
    expect(byPk(appPagesPk(a.appId)).map((p) => (p.ks as string[]).length)).toEqual([
      PAGE_ENTRIES,
      2,
    ]);
    expect(byPk(appPagesPk(b.appId)).map((p) => (p.ks as string[]).length)).toEqual([2]);
    // Paged heads lose their gsi1 keys; the lone ones keep them.
    expect(plan.heads.filter((h) => h.gsi1pk === undefined)).toHaveLength(18);
    expect(plan.heads[16]).toBe(heads[16]);
    expect(plan.heads[19]).toBe(heads[19]);
    for (const p of plan.pages) {
      const ks = p.ks as string[];
      expect(String(p.sk).startsWith(`${ks[0]!.split('#')[0]}#`)).toBe(true);
      expect(
        Date.parse(ks.at(-1)!.split('#')[0]!) - Date.parse(ks[0]!.split('#')[0]!),
      ).toBeLessThan(PAGE_SPAN_MS);
      // Under 1 KB: one write unit. Kept a year past its dispatches' retention.
      expect(itemBytes(p)).toBeLessThanOrEqual(1024);
      expect(Number(p.retainUntil)).toBeGreaterThan(Number(heads[0]!.retainUntil));
    }
  });
});

describe('the fast writer and the readers of an app’s dispatches', () => {
  it('names a batch’s dispatches by pages and lists each once, in order, both ways, page by page', async () => {
    const app = newApp();
    const writer = writerOn();
    const t0 = Date.now() - 60_000;
    // 40 dispatches in one burst (paged), and 3 spread out (each alone: gsi1).
    const burst = Array.from({ length: 40 }, (_, i) =>
      deliveredFirstAttempt(rt, app, at(t0 + i * 7)),
    );
    const spread = [10_000, 20_000, 30_000].map((d) => deliveredFirstAttempt(rt, app, at(t0 + d)));
    // Another app's in the same batches: never listed with this one's.
    const stranger = newApp();
    const theirs = Array.from({ length: 5 }, () => deliveredFirstAttempt(rt, stranger, at(t0 + 3)));
    const pagedBefore = await pagedCount();
    await writer.write(spread[0]!, 'fast'); // the app announced alone first
    const results = await Promise.all(
      [...burst, ...spread.slice(1), ...theirs].map((r) => writer.write(r, 'fast')),
    );
    expect(new Set(results)).toEqual(new Set(['recorded']));
    const pages = await pagesOf(app.appId);
    expect(pages.length).toBeGreaterThan(0);
    // A batch holds 25 records: one of the burst may be alone in its batch (a gsi1 entry).
    const paged = new Set(pages.flatMap((p) => p.ks as string[]));
    expect(burst.filter((r) => paged.has(keyOf(r))).length).toBeGreaterThanOrEqual(38);
    for (const r of burst) {
      const item = await stored(r.dispatchId);
      expect(item?.gsi1pk).toBe(paged.has(keyOf(r)) ? undefined : `APP#${app.appId}`);
      expect(r.page !== undefined).toBe(paged.has(keyOf(r)));
    }
    expect((await stored(burst[0]!.dispatchId))?.gsi1pk).toBeUndefined();
    // svc_webhook_ledger_paged_total: this app's paged dispatches and the others' (5, one page).
    const pagedAfter = await pagedCount();
    expect({
      dispatch: pagedAfter.dispatch - pagedBefore.dispatch,
      page: pagedAfter.page - pagedBefore.page,
    }).toEqual({
      dispatch: burst.filter((r) => paged.has(keyOf(r))).length + theirs.length,
      page: pages.length + 1,
    });
    expect((await stored(spread[0]!.dispatchId))?.gsi1pk).toBe(`APP#${app.appId}`);

    const expected = [...burst, ...spread].map(keyOf).sort();
    for (const want of [1, 3, 7, 50]) {
      expect(await walk(app.appId, { want })).toEqual(expected);
      expect(await walk(app.appId, { want, desc: true })).toEqual([...expected].reverse());
    }
    // A time range, and the API's helpers.
    const from = at(t0 + 70);
    const to = at(t0 + 20_000);
    const inRange = expected.filter((k) => k >= from && k < to);
    expect(await walk(app.appId, { want: 4, from, to })).toEqual(inRange);
    const listed = await listDispatchesByApp(rt, app.appId, { limit: 1000 });
    expect(listed.items.map((d) => `${d.createdAt}#${d.dispatchId}`)).toEqual(expected);
    const newest = await listDispatchesByApp(rt, app.appId, { order: 'desc', limit: 1 });
    expect(newest.items.map((d) => d.dispatchId)).toEqual([spread[2]!.dispatchId]);
    const filtered = await listDispatchesByApp(rt, app.appId, { deliveryStatus: 'failed' });
    expect(filtered.items).toEqual([]);
    expect(await firstDispatchAt(rt, app.appId)).toBe(burst[0]!.head.createdAt);
    const leaves = await currentLeaves(rt, app.appId, at(t0), at(t0 + 60_000));
    expect(leaves.map((l) => `${l.createdAt}#${l.dispatchId}`)).toEqual(expected);
    for (const l of leaves) expect(l.headHash).toMatch(/^sha256:|^[0-9a-f]{64}$/);
    const exported: string[] = [];
    for await (const d of exportDispatches(
      rt,
      { appId: app.appId, from: at(t0), to: at(t0 + 60_000) },
      { pageSize: 6 },
    ))
      exported.push(d.dispatchId);
    expect(exported).toEqual(expected.map((k) => k.split('#')[1]));
    // The other app sees only its own.
    expect(await walk(stranger.appId, { want: 2 })).toEqual(theirs.map(keyOf).sort());
  });

  it('lists every dispatch once when more pages than one query reads overlap in one second', async () => {
    const app = newApp();
    const writer = writerOn(rt, 5);
    const t0 = Date.now() - 40_000;
    // 130 pages of two, all within one second (more than the 100 pages a query reads), and a
    // few lone dispatches (gsi1) among them.
    const recs = Array.from({ length: 260 }, (_, i) =>
      deliveredFirstAttempt(rt, app, at(t0 + i * 3)),
    );
    for (let i = 0; i < recs.length; i += 2)
      await Promise.all(recs.slice(i, i + 2).map((r) => writer.write(r, 'fast')));
    const lone = [t0 + 100, t0 + 500, t0 + 2_000].map((ms) =>
      deliveredFirstAttempt(rt, app, at(ms)),
    );
    for (const r of lone) await writer.write(r, 'fast');
    expect((await pagesOf(app.appId)).length).toBe(130);
    const expected = [...recs, ...lone].map(keyOf).sort();
    for (const want of [1, 9, 120]) {
      expect(await walk(app.appId, { want })).toEqual(expected);
      expect(await walk(app.appId, { want, desc: true })).toEqual([...expected].reverse());
    }
    const from = at(t0 + 301);
    const to = at(t0 + 602);
    expect(await walk(app.appId, { want: 5, from, to })).toEqual(
      expected.filter((k) => k >= from && k < to),
    );
  });

  it('a page’s bound on evaluation ends a filtered page short at a dispatch key that moves on', async () => {
    const app = newApp();
    const writer = writerOn();
    const t0 = Date.now() - 30_000;
    const recs = Array.from({ length: 20 }, (_, i) =>
      deliveredFirstAttempt(rt, app, at(t0 + i * 50)),
    );
    const lone = [5_000, 6_000, 7_000].map((d) => deliveredFirstAttempt(rt, app, at(t0 + d)));
    await Promise.all([...recs, ...lone].map((r) => writer.write(r, 'fast')));
    const q = { appId: app.appId, event: 'consent.withdrawn' }; // none match
    let startKey: Record<string, string> | undefined;
    let rounds = 0;
    do {
      const page = await readDispatchPage(rt, q, { startKey, limit: 5, maxEvaluated: 2 });
      expect(page.items).toEqual([]);
      if (page.nextKey) {
        expect(page.nextKey.pk).toMatch(/^DSP#dsp_/);
        if (startKey) expect(page.nextKey.gsi1sk! > startKey.gsi1sk!).toBe(true);
      }
      startKey = page.nextKey;
      rounds++;
    } while (startKey && rounds < 50);
    expect(startKey).toBeUndefined();
  });

  it('skips what a page names that is not in the ledger or is another app’s, and lists a dispatch in both once', async () => {
    const app = newApp();
    const other = newApp();
    const writer = writerOn();
    const t0 = Date.now() - 20_000;
    const recs = Array.from({ length: 4 }, (_, i) => deliveredFirstAttempt(rt, app, at(t0 + i)));
    const foreign = deliveredFirstAttempt(rt, other, at(t0 + 2));
    await Promise.all([...recs, foreign].map((r) => writer.write(r, 'fast')));
    const never = deliveredFirstAttempt(rt, app, at(t0 + 1)); // named, never written
    // A page naming a dispatch never written, another app's, and one already listed.
    await rt.dynamo.doc.send(
      new PutCommand({
        TableName: rt.tables.ledger,
        Item: {
          pk: appPagesPk(app.appId),
          sk: `${at(t0)}#forged`,
          ks: [keyOf(never), keyOf(foreign), keyOf(recs[1]!)],
        },
      }),
    );
    const expected = recs.map(keyOf).sort();
    expect(await walk(app.appId, { want: 2 })).toEqual(expected);
    expect(await walk(app.appId, { want: 2, desc: true })).toEqual([...expected].reverse());
  });

  it('writes a page again that the store lost while its dispatch items stayed (recheck after an outage)', async () => {
    const app = newApp();
    const writer = writerOn();
    const t0 = Date.now() - 10_000;
    const recs = Array.from({ length: 3 }, (_, i) => deliveredFirstAttempt(rt, app, at(t0 + i)));
    await Promise.all(recs.map((r) => writer.write(r, 'fast')));
    const [page] = await pagesOf(app.appId);
    expect(page).toBeDefined();
    await rt.dynamo.doc.send(
      new DeleteCommand({ TableName: rt.tables.ledger, Key: { pk: page!.pk, sk: page!.sk } }),
    );
    expect(await walk(app.appId, { want: 10 })).toEqual([]);
    expect(await writer.recheck(Date.now())).toBe(0); // no dispatch item was gone
    expect(await pagesOf(app.appId)).toEqual([page]);
    expect(await walk(app.appId, { want: 10 })).toEqual(recs.map(keyOf).sort());
  });

  it('with LEDGER_APP_PAGES off writes a gsi1 entry for each dispatch and no page', async () => {
    const off = { ...rt, config: { ...rt.config, LEDGER_APP_PAGES: false } } as Runtime;
    const app = newApp();
    const writer = writerOn(off, 0);
    const recs = Array.from({ length: 3 }, () => deliveredFirstAttempt(off, app));
    await Promise.all(recs.map((r) => writer.write(r, 'fast')));
    expect(await pagesOf(app.appId)).toEqual([]);
    for (const r of recs) expect((await stored(r.dispatchId))?.gsi1pk).toBe(`APP#${app.appId}`);
    expect(await walk(app.appId, { want: 2 })).toEqual(recs.map(keyOf).sort());
  });
});

describe('over REST, through the real processes', () => {
  let f: LedgerFixture;
  let a: LedgerApp;
  beforeAll(async () => {
    // Events created after the dispatcher took its partitions take the fast path at once
    // (by default those of its first minute are looked up first, and written conditionally).
    f = await startLedgerProcess('ledger-pages', { env: { DISPATCH_CLOCK_SKEW_MS: '0' } });
    a = await f.createApp('pages');
  }, 60_000);
  afterAll(async () => {
    await f?.close();
  });

  it('a consent’s dispatches are named by a page, and the ledger API lists every one once', async () => {
    // The first events after the dispatcher's assignment are written conditionally (another
    // owner may have taken them); those after take the fast path.
    await f.consent(a, 'user-first', { marketing: true });
    await f.settle(a, 2);
    await Promise.all(
      Array.from({ length: 12 }, (_, i) => f.consent(a, `user-${i}`, { marketing: true })),
    );
    await f.settle(a, 26);
    const r = await f.call('GET', '/api/v1/ledger/dispatches?limit=200', { key: a.auditor });
    const all = (r.body.items as { dispatchId: string; createdAt: string }[]).map(
      (d) => `${d.createdAt}#${d.dispatchId}`,
    );
    expect(all).toEqual([...all].sort());
    expect(new Set(all).size).toBe(26);
    const named = new Set(
      (
        await f.p.rt.dynamo.doc.send(
          new QueryCommand({
            TableName: f.p.rt.tables.ledger,
            KeyConditionExpression: 'pk = :pk',
            ExpressionAttributeValues: { ':pk': appPagesPk(a.appId) },
            ConsistentRead: true,
          }),
        )
      ).Items!.flatMap((p) => p.ks as string[]),
    );
    // Records of the fast path written within the writer's linger share a page: at least one
    // here (how many depends on how close together the deliveries ended on a busy machine).
    expect(named.size).toBeGreaterThanOrEqual(2);
    for (const k of named) expect(all).toContain(k);
    const pages = await allPages(f, a.auditor, 'limit=5');
    expect(pages.flatMap((p) => p.ids)).toEqual(all.map((k) => k.split('#')[1]));
  }, 60_000);
});
