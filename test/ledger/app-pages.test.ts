import { DeleteCommand, GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  decodeListing,
  encodeListing,
  LISTING_ENTRIES,
  LISTING_SPAN_MS,
  PAGES_INDEX,
  planListings,
  readAppDispatches,
} from '../../shared/storage/ledger/app-pages.js';
import { recordAttempt } from '../../shared/storage/ledger/attempts.js';
import { currentLeaves, firstDispatchAt } from '../../shared/storage/ledger/checkpoint-store.js';
import {
  dispatchKey,
  dispatchPk,
  getDispatchState,
} from '../../shared/storage/ledger/dispatches.js';
import { exportDispatches, readDispatchPage } from '../../shared/ledger/export.js';
import { listDispatchesByApp } from '../../shared/ledger/queries.js';
import type { Runtime } from '../../shared/runtime.js';
import { dispatcherMetrics } from '../../workers/dispatcher/metrics.js';
import { FirstAttemptWriter } from '../../workers/dispatcher/writer.js';
import { deliveredFirstAttempt } from '../dispatch/helpers.js';
import { testRuntime } from '../helpers/stack.js';
import { allPages, startLedgerProcess, type LedgerApp, type LedgerFixture } from './fixture.js';

/**
 * An app's dispatches listed through `gsi1` and carriers (shared/storage/ledger/app-pages.ts): the
 * dispatcher's fast writer names the dispatches of one app it writes together by a listing one
 * of them carries (in the `pages` index) instead of a `gsi1` entry each, and every reader of an
 * app's dispatches merges both. Against DynamoDB Local: the writer and the readers, then the
 * real processes over REST.
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
const keyOf = (r: { head: Record<string, unknown>; dispatchId: string }) =>
  `${String(r.head.createdAt)}#${r.dispatchId}`;

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

/** The carriers of an app's dispatches, as the `pages` index holds them, each with its `ks`. */
async function carriersOf(appId: string, r: Runtime = rt) {
  const out = await r.dynamo.doc.send(
    new QueryCommand({
      TableName: r.tables.ledger,
      IndexName: PAGES_INDEX,
      KeyConditionExpression: 'appId = :app',
      ExpressionAttributeValues: { ':app': appId },
    }),
  );
  // The index holds the keys alone: the carrier's, and its listing.
  for (const c of out.Items ?? [])
    expect(Object.keys(c).sort()).toEqual(['appId', 'lk', 'pk', 'sk']);
  return (out.Items ?? []).map((c): Record<string, unknown> => ({
    ...c,
    ks: decodeListing(String(c.lk)),
  }));
}

/** One writer, one flush at a time: records written together share a batch. */
const writerOn = (lingerMs = 25) =>
  new FirstAttemptWriter(rt, {
    metrics: dispatcherMetrics(rt.registry),
    log: rt.log,
    maxFlushes: 1,
    lingerMs,
  });

/** `svc_webhook_ledger_paged_total` by item. */
async function pagedCount(): Promise<{ dispatch: number; carrier: number }> {
  const m = await rt.registry.getSingleMetric('svc_webhook_ledger_paged_total')?.get();
  const of = (item: string) =>
    m?.values.filter((v) => v.labels.item === item).reduce((n, v) => n + v.value, 0) ?? 0;
  return { dispatch: of('dispatch'), carrier: of('carrier') };
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

describe('planListings', () => {
  it('groups one app’s dispatches by time, at most 14 and within the span, and keeps gsi1 for a lone one', () => {
    const a = newApp();
    const b = newApp();
    const t0 = Date.parse('2026-11-28T10:00:00.000Z');
    const heads = [
      ...Array.from({ length: 16 }, (_, i) => deliveredFirstAttempt(rt, a, at(t0 + i)).head),
      deliveredFirstAttempt(rt, a, at(t0 + 5_000)).head, // alone in its span
      deliveredFirstAttempt(rt, b, at(t0)).head,
      deliveredFirstAttempt(rt, b, at(t0 + LISTING_SPAN_MS - 1)).head,
      deliveredFirstAttempt(rt, b, at(t0 + LISTING_SPAN_MS + 10)).head, // past b's first listing
    ];
    const plan = planListings(heads, () => true);
    const listings = (appId: string) =>
      plan.heads.filter((h) => h.appId === appId && h.lk !== undefined).map((h) => String(h.lk));
    expect(listings(a.appId).map((lk) => decodeListing(lk).length)).toEqual([LISTING_ENTRIES, 2]);
    expect(listings(b.appId).map((lk) => decodeListing(lk).length)).toEqual([2]);
    // Listed heads lose their gsi1 keys; the lone ones are left as they came.
    expect(plan.heads.filter((h) => h.gsi1pk === undefined)).toHaveLength(18);
    expect(plan.heads[16]).toBe(heads[16]);
    expect(plan.heads[19]).toBe(heads[19]);
    for (const lk of [...listings(a.appId), ...listings(b.appId)]) {
      const ks = decodeListing(lk);
      expect(lk.startsWith(`${ks[0]!.split('#')[0]}|`)).toBe(true);
      expect(
        Date.parse(ks.at(-1)!.split('#')[0]!) - Date.parse(ks[0]!.split('#')[0]!),
      ).toBeLessThan(LISTING_SPAN_MS);
    }
    // Every key that lost its gsi1 entry is named once, by its own app's carrier.
    const named = [...listings(a.appId), ...listings(b.appId)].flatMap(decodeListing);
    const unindexed = heads.filter((_, i) => plan.heads[i]!.gsi1pk === undefined);
    expect(named.sort()).toEqual(unindexed.map((h) => String(h.gsi1sk)).sort());
  });

  it('lists a group by its smallest allowed member, and leaves a group none may carry in gsi1', () => {
    const a = newApp();
    const t0 = Date.parse('2026-11-28T11:00:00.000Z');
    const heads = Array.from(
      { length: 5 },
      (_, i) => deliveredFirstAttempt(rt, a, at(t0 + i)).head,
    );
    // Members 1 and 3 are the smallest; 1 is not allowed (it has an SLA check to write first,
    // say), so 3 carries the listing.
    heads[0] = { ...heads[0], note: 'x'.repeat(40) };
    heads[2] = { ...heads[2], note: 'x'.repeat(40) };
    // Member 4 was written a few seconds later: the carrier is kept as long as it.
    const latest = Number(heads[4]!.retainUntil) + 3;
    heads[4] = { ...heads[4], note: 'x'.repeat(40), retainUntil: latest };
    const plan = planListings(heads, (i) => i !== 1);
    const keys = heads.map((h) => String(h.gsi1sk));
    expect(plan.carried.map((c) => c !== undefined)).toEqual([false, false, false, true, false]);
    expect(plan.carried[3]).toEqual({ lk: encodeListing(keys), retainUntil: latest });
    expect(decodeListing(String(plan.carried[3]!.lk))).toEqual(keys);
    // Every member loses its gsi1 keys; the carrier holds the listing, the rest nothing more.
    for (const h of plan.heads) expect(h.gsi1pk).toBeUndefined();
    expect(plan.heads[3]).toMatchObject(plan.carried[3]!);
    expect(plan.heads[0]!.lk).toBeUndefined();
    // No member allowed, or keys a listing cannot name: every member keeps its gsi1 entry.
    const none = planListings(heads, () => false);
    expect(none.carried.every((c) => c === undefined)).toBe(true);
    none.heads.forEach((h, i) => expect(h).toBe(heads[i]));
    const odd = heads.map((h) => ({ ...h, gsi1sk: String(h.gsi1sk).replace(/\.\d{3}Z/, 'Z') }));
    const unnamed = planListings(odd, () => true);
    unnamed.heads.forEach((h, i) => expect(h).toBe(odd[i]));
  });
});

describe('a carrier’s listing', () => {
  it('names its keys in one string that starts with the earliest time and comes back the same', () => {
    const keys = [
      '2026-11-28T10:00:00.000Z#dsp_01M8JFPANGFA1HCV148GBZFPW4',
      '2026-11-28T10:00:00.000Z#dsp_01M8JFPANS0N59WM277KRVHSX2',
      '2026-11-28T10:00:00.999Z#other-id',
    ];
    const lk = encodeListing(keys)!;
    expect(lk).toBe(
      '2026-11-28T10:00:00.000Z|0:01M8JFPANGFA1HCV148GBZFPW4|0:01M8JFPANS0N59WM277KRVHSX2|999:=other-id',
    );
    expect(decodeListing(lk)).toEqual(keys);
    // About 30 bytes an entry.
    expect(lk.length).toBeLessThan(24 + 3 * 32);
  });

  it('is refused for a time that would not come back the same, or an id with its separator', () => {
    expect(encodeListing(['2026-11-28T10:00:00Z#dsp_A', '2026-11-28T10:00:00.500Z#dsp_B'])).toBe(
      undefined,
    );
    expect(encodeListing(['2026-11-28T10:00:00.000Z#dsp_A|B'])).toBeUndefined();
    expect(encodeListing(['2026-11-28T10:00:00.000Z#'])).toBeUndefined();
    expect(encodeListing([])).toBeUndefined();
  });

  it('skips what is malformed when read back', () => {
    expect(decodeListing('not a time|0:A')).toEqual([]);
    expect(decodeListing('2026-11-28T10:00:00.000Z|x:A|-1:B|:C|5:|7:D')).toEqual([
      '2026-11-28T10:00:00.007Z#dsp_D',
    ]);
  });
});

describe('the fast writer and the readers of an app’s dispatches', () => {
  // Walks of 43 dispatches one at a time both ways, the export and the API's helpers.
  it('names a batch’s dispatches by carriers and lists each once, in order, both ways, page by page', async () => {
    const app = newApp();
    const writer = writerOn();
    const t0 = Date.now() - 60_000;
    // 40 dispatches in one burst (carried), and 3 spread out (each alone: gsi1).
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
    const carriers = await carriersOf(app.appId);
    expect(carriers.length).toBeGreaterThan(0);
    // A batch holds 25 records: one of the burst may be alone in its batch (a gsi1 entry).
    const listed = new Set(carriers.flatMap((c) => c.ks as string[]));
    expect(burst.filter((r) => listed.has(keyOf(r))).length).toBeGreaterThanOrEqual(38);
    for (const r of burst) {
      const item = await stored(r.dispatchId);
      expect(item?.gsi1pk).toBe(listed.has(keyOf(r)) ? undefined : `APP#${app.appId}`);
      expect(r.listedBy !== undefined).toBe(listed.has(keyOf(r)));
      // A carrier is one of the dispatches it names, and holds the listing as written.
      if (item?.lk !== undefined) {
        expect(r.listedBy).toBe('itself');
        expect(decodeListing(String(item.lk))).toContain(keyOf(r));
        expect(r.head.lk).toEqual(item.lk);
      }
    }
    expect((await stored(burst[0]!.dispatchId))?.gsi1pk).toBeUndefined();
    // svc_webhook_ledger_paged_total: this app's listed dispatches and the others' (5, one carrier).
    const pagedAfter = await pagedCount();
    expect({
      dispatch: pagedAfter.dispatch - pagedBefore.dispatch,
      carrier: pagedAfter.carrier - pagedBefore.carrier,
    }).toEqual({
      dispatch: burst.filter((r) => listed.has(keyOf(r))).length + theirs.length,
      carrier: carriers.length + 1,
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
    const all = await listDispatchesByApp(rt, app.appId, { limit: 1000 });
    expect(all.items.map((d) => `${d.createdAt}#${d.dispatchId}`)).toEqual(expected);
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
  }, 60_000);

  it('gives a group whose records all have an SLA check gsi1 entries, listed with the carried ones', async () => {
    const app = newApp();
    const writer = writerOn();
    const t0 = Date.now() - 50_000;
    // Withdrawals need a postback: each has its SLA check to write first, so none may carry.
    const withdrawals = Array.from({ length: 4 }, (_, i) =>
      deliveredFirstAttempt(rt, app, at(t0 + i * 10), 'consent.withdrawn'),
    );
    const grants = Array.from({ length: 4 }, (_, i) =>
      deliveredFirstAttempt(rt, app, at(t0 + 5_000 + i * 10)),
    );
    for (const r of withdrawals) expect(r.children).toHaveLength(1);
    await Promise.all([...withdrawals, ...grants].map((r) => writer.write(r, 'fast')));
    for (const r of withdrawals) {
      expect(r.listedBy).toBeUndefined();
      expect((await stored(r.dispatchId))?.gsi1pk).toBe(`APP#${app.appId}`);
    }
    const carriers = await carriersOf(app.appId);
    expect(carriers.map((c) => c.ks)).toEqual([grants.map(keyOf).sort()]);
    const expected = [...withdrawals, ...grants].map(keyOf).sort();
    for (const want of [1, 3, 10]) {
      expect(await walk(app.appId, { want })).toEqual(expected);
      expect(await walk(app.appId, { want, desc: true })).toEqual([...expected].reverse());
    }
  });

  // Some 1,300 requests (the writes, then walks a dispatch at a time both ways): slow on a
  // loaded machine.
  it('lists every dispatch once when more carriers than one query reads overlap in one second', async () => {
    const app = newApp();
    const writer = writerOn(5);
    const t0 = Date.now() - 40_000;
    // 130 listings of two, all within one second (more than the 100 a query reads), and a few
    // lone dispatches (gsi1) among them.
    const recs = Array.from({ length: 260 }, (_, i) =>
      deliveredFirstAttempt(rt, app, at(t0 + i * 3)),
    );
    for (let i = 0; i < recs.length; i += 2)
      await Promise.all(recs.slice(i, i + 2).map((r) => writer.write(r, 'fast')));
    const lone = [t0 + 100, t0 + 500, t0 + 2_000].map((ms) =>
      deliveredFirstAttempt(rt, app, at(ms)),
    );
    for (const r of lone) await writer.write(r, 'fast');
    expect((await carriersOf(app.appId)).length).toBe(130);
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
  }, 90_000);

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

  it('skips what a listing names that is not in the ledger or is another app’s, and lists a dispatch in both once', async () => {
    const app = newApp();
    const other = newApp();
    const writer = writerOn();
    const t0 = Date.now() - 20_000;
    const recs = Array.from({ length: 4 }, (_, i) => deliveredFirstAttempt(rt, app, at(t0 + i)));
    const foreign = deliveredFirstAttempt(rt, other, at(t0 + 2));
    await Promise.all([...recs, foreign].map((r) => writer.write(r, 'fast')));
    const never = deliveredFirstAttempt(rt, app, at(t0 + 1)); // named, never written
    // A forged carrier naming a dispatch never written, another app's, and one already listed.
    const forged = [keyOf(never), keyOf(foreign), keyOf(recs[1]!)].sort();
    await rt.dynamo.doc.send(
      new PutCommand({
        TableName: rt.tables.ledger,
        Item: {
          pk: dispatchPk('dsp_forged'),
          sk: 'DSP',
          appId: app.appId,
          lk: encodeListing(forged),
        },
      }),
    );
    expect((await carriersOf(app.appId)).length).toBe(2);
    const expected = recs.map(keyOf).sort();
    expect(await walk(app.appId, { want: 2 })).toEqual(expected);
    expect(await walk(app.appId, { want: 2, desc: true })).toEqual([...expected].reverse());
  });

  it('a dispatch that changes after it was written lists itself, so it stays listed when its carrier is gone', async () => {
    const app = newApp();
    const writer = writerOn();
    const t0 = Date.now() - 15_000;
    const recs = Array.from({ length: 3 }, (_, i) => deliveredFirstAttempt(rt, app, at(t0 + i)));
    await Promise.all(recs.map((r) => writer.write(r, 'fast')));
    const [carrier] = await carriersOf(app.appId);
    const named = recs.find((r) => r.dispatchId !== String(carrier!.pk).replace(/^DSP#/, ''))!;
    expect((await stored(named.dispatchId))?.gsi1pk).toBeUndefined();
    // A later attempt (a manual re-send) moves its retention on: it takes its gsi1 entry.
    const state = (await getDispatchState(rt, named.dispatchId))!;
    const { result } = await recordAttempt(rt, {
      state,
      deliveryStatus: 'delivered',
      entry: {
        trigger: 'manual',
        time: new Date().toISOString(),
        durationMs: 2,
        destination: 'http://127.0.0.1/hook',
        statusCode: 200,
        responseExcerpt: '',
        outcome: 'delivered',
      },
    });
    expect(result).toBe('recorded');
    expect(await stored(named.dispatchId)).toMatchObject({
      gsi1pk: `APP#${app.appId}`,
      gsi1sk: keyOf(named),
    });
    // The carrier expires (DynamoDB's TTL deletes it): the changed dispatch is still listed.
    await rt.dynamo.doc.send(
      new DeleteCommand({ TableName: rt.tables.ledger, Key: { pk: carrier!.pk, sk: carrier!.sk } }),
    );
    expect(await walk(app.appId, { want: 10 })).toEqual([keyOf(named)]);
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

  it('a consent’s dispatches are named by a carrier, and the ledger API lists every one once', async () => {
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
    const carriers = await carriersOf(a.appId, f.p.rt);
    const named = new Set(carriers.flatMap((c) => c.ks as string[]));
    // Records of the fast path written within the writer's linger share a carrier: at least
    // one here (how many depends on how close together the deliveries ended on a busy machine).
    expect(named.size).toBeGreaterThanOrEqual(2);
    // A carrier is one of the dispatches it names.
    for (const c of carriers) {
      const id = String(c.pk).replace(/^DSP#/, '');
      expect((c.ks as string[]).some((k) => k.endsWith(`#${id}`))).toBe(true);
    }
    for (const k of named) expect(all).toContain(k);
    const pages = await allPages(f, a.auditor, 'limit=5');
    expect(pages.flatMap((p) => p.ids)).toEqual(all.map((k) => k.split('#')[1]));
  }, 60_000);
});
