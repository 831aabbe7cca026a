import { randomUUID } from 'node:crypto';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { Runtime } from '../runtime.js';
import { dispatchKey, isDispatchHead } from './dispatches.js';
import { impliedFields } from './packed.js';
import { readDispatchViews } from './principal.js';
import { RETAIN_ATTR } from './retention.js';
import { itemBytes } from '../storage/billing.js';

/**
 * An app's dispatches by event time: `gsi1` (key `APP#{appId}` / `{createdAt}#{dispatchId}`)
 * and **listings**. A listing names several dispatches of one app by that same key (`ks`),
 * written by the dispatcher with a batch of first attempts instead of a `gsi1` entry for each
 * (`planPages`). It is one of two things:
 *
 * - **A carrier**: one of the batch's own dispatch items holds the listing in `lk`, one string:
 *   the earliest `createdAt`, then each entry's milliseconds after it and its dispatch id
 *   (`encodeListing`, about 30 bytes an entry against a page's 57), naming itself too. The
 *   ledger's sparse `pages` index (keys only) has it by `appId` and `lk`, so a listing sorts by
 *   its earliest time and its index entry is the listing. No item more than the dispatches
 *   themselves, and the carrier mostly stays under the kilobyte of one write unit. The carrier
 *   is the smallest item of its group whose record has no SLA check to write first. Written
 *   once this process has seen the index ACTIVE (`LEDGER_PAGE_CARRIERS`).
 * - **A page item**, key `APP#{appId}#PAGES` / `{earliest createdAt}#{uuid}` in the ledger table
 *   itself, where no member of a group may be its carrier (all have an SLA check) or carriers
 *   are off: one write unit for up to `PAGE_ENTRIES` dispatches where each entry cost one.
 *
 * Every reader of an app's dispatches (the ledger API's list and export, the console, the
 * requeue, the checkpoint sealer) reads all three through `readAppDispatches`.
 *
 * - The entries of a listing lie less than `PAGE_SPAN_MS` after its earliest, so a time range is
 *   found by a key condition widened by that span.
 * - A listing is written before the dispatch items it names (the dispatcher's first phase,
 *   with the SLA checks), so a dispatch item in the ledger without a `gsi1` entry always has
 *   its listing. A listing may name a dispatch that never landed (its write was cut short and
 *   redone, perhaps elsewhere with a `gsi1` entry, or not at all): readers read the dispatch
 *   items by key (BatchGetItem, consistent) and skip the missing. A dispatch named twice (a
 *   listing and `gsi1`, or two listings) is listed once.
 * - A listing holds keys alone: no personal data, nothing the erasure redacts.
 * - Retention: a page item's `retainUntil` is the latest of its dispatches' plus
 *   `PAGE_RETAIN_MARGIN_S`, since a dispatch's item is kept from its last change (retention.ts)
 *   and a page is never rewritten. A carrier is kept as its own dispatch is (its data may not
 *   outlive the app's retention), from the latest `retainUntil` its group was written with (the
 *   group's records are seconds apart at most), so a named dispatch that changes after it was
 *   written puts itself in `gsi1` with that change (dispatches.ts, `appIndexUpdate`): whatever
 *   outlives its carrier lists itself.
 */

/** The ledger's sparse index of carriers, by `appId` and `lk` (keys only). */
export const PAGES_INDEX = 'pages';
/** A carrier's listing attribute (`encodeListing`). */
export const LISTING_ATTR = 'lk';

const DSP = 'dsp_';

/**
 * A carrier's listing of `keys` (`{createdAt}#{dispatchId}`, in order, the first the earliest):
 * `{earliest}` then `|{ms after it}:{id}` each, a dispatch id without its `dsp_` (any other id
 * after `=`). Undefined when a key's time does not come back the same from its milliseconds
 * (not an ISO time as `toISOString` writes it): such a group gets a page item.
 */
export function encodeListing(keys: readonly string[]): string | undefined {
  const first = keys[0]?.split('#', 1)[0];
  if (first === undefined) return undefined;
  const t0 = Date.parse(first);
  const parts = [first];
  for (const key of keys) {
    const time = key.split('#', 1)[0]!;
    const id = idOf(key);
    const ms = Date.parse(time);
    if (!Number.isFinite(ms) || new Date(ms).toISOString() !== time || ms < t0) return undefined;
    if (id === '' || id.includes('|')) return undefined;
    parts.push(`${ms - t0}:${id.startsWith(DSP) ? id.slice(DSP.length) : `=${id}`}`);
  }
  return parts.join('|');
}

/** The keys a carrier's listing names (`encodeListing`); a malformed entry is skipped. */
export function decodeListing(lk: string): string[] {
  const [first, ...entries] = lk.split('|');
  const t0 = Date.parse(first ?? '');
  if (!Number.isFinite(t0)) return [];
  return entries.flatMap((e) => {
    const colon = e.indexOf(':');
    const delta = Number(e.slice(0, colon));
    const raw = e.slice(colon + 1);
    if (colon < 1 || !Number.isInteger(delta) || delta < 0 || raw === '') return [];
    const id = raw.startsWith('=') ? raw.slice(1) : `${DSP}${raw}`;
    return [`${new Date(t0 + delta).toISOString()}#${id}`];
  });
}

/** Most time between the earliest and the latest entry of a page (exclusive). */
export const PAGE_SPAN_MS = 1_000;
/** Most entries a page names: with its keys it stays under 1 KB (one write unit). */
export const PAGE_ENTRIES = 14;
/** How long a page outlives the latest retention of the dispatches it names (a year). */
export const PAGE_RETAIN_MARGIN_S = 366 * 86_400;

export const appPagesPk = (appId: string) => `APP#${appId}#PAGES`;
const INDEX_PK = /^APP#(.+)$/;

/** The time part of a `{createdAt}#{dispatchId}` key (or of a bare ISO time). */
const timeOf = (key: string) => Date.parse(key.split('#', 1)[0]!);

/** An ISO key bound moved by `ms`; a bound that is no time (`0000`, `9999`) stays. */
function shifted(bound: string, ms: number): string {
  const t = timeOf(bound);
  return Number.isFinite(t) ? new Date(t + ms).toISOString() : bound;
}

export interface PagePlan {
  /** Page items to write before the dispatch items. */
  pages: Record<string, unknown>[];
  /**
   * The dispatch items as they are then written: those a page or a carrier names without `gsi1`
   * keys, a carrier with its listing (`carried`).
   */
  heads: Record<string, unknown>[];
  /** The page that names each head (by its index), undefined for any other. */
  pageOf: (Record<string, unknown> | undefined)[];
  /** The listing a carrier holds (`lk`), by index; undefined for any other. */
  carried: (Record<string, unknown> | undefined)[];
}

/**
 * Pages for a batch of new dispatch items (`heads`, as `dispatchItem` builds them): their keys
 * grouped by app, in key order, cut at `PAGE_ENTRIES` entries or `PAGE_SPAN_MS`. A group of one
 * keeps its `gsi1` entry (a page would cost the same and a read more). With `carrier`, a group
 * is listed by one of its own dispatch items instead of a page item, the smallest of those
 * `carrier` allows (none: a page item); it must be written before the others (`carried`).
 */
export function planPages(
  heads: readonly Record<string, unknown>[],
  carrier?: (i: number) => boolean,
): PagePlan {
  const byApp = new Map<string, { key: string; i: number }[]>();
  heads.forEach((h, i) => {
    if (typeof h.gsi1pk !== 'string' || typeof h.gsi1sk !== 'string') return;
    if (!INDEX_PK.test(h.gsi1pk) || !Number.isFinite(timeOf(h.gsi1sk))) return;
    const list = byApp.get(h.gsi1pk) ?? [];
    list.push({ key: h.gsi1sk, i });
    byApp.set(h.gsi1pk, list);
  });
  const pages: Record<string, unknown>[] = [];
  const pageOf: (Record<string, unknown> | undefined)[] = heads.map(() => undefined);
  const carried: (Record<string, unknown> | undefined)[] = heads.map(() => undefined);
  const listed = heads.map(() => false);
  for (const [indexPk, list] of byApp) {
    list.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    for (let start = 0; start < list.length;) {
      const t0 = timeOf(list[start]!.key);
      let end = start + 1;
      while (
        end < list.length &&
        end - start < PAGE_ENTRIES &&
        timeOf(list[end]!.key) - t0 < PAGE_SPAN_MS
      )
        end++;
      const group = list.slice(start, end);
      start = end;
      if (group.length < 2) continue;
      const earliest = group[0]!.key.split('#', 1)[0]!;
      const ks = group.map((g) => g.key);
      for (const g of group) listed[g.i] = true;
      const retain = Math.max(...group.map((g) => Number(heads[g.i]![RETAIN_ATTR]) || 0));
      const lk = carrier ? encodeListing(ks) : undefined;
      const by = lk
        ? smallest(
            group.filter((g) => carrier!(g.i)),
            heads,
          )
        : undefined;
      if (by) {
        // Kept as long as the longest kept of its group as written (seconds apart at most).
        const own = Number(heads[by.i]![RETAIN_ATTR]) || 0;
        carried[by.i] = { [LISTING_ATTR]: lk, ...(retain > own ? { [RETAIN_ATTR]: retain } : {}) };
        continue;
      }
      const page = {
        pk: `${indexPk}#PAGES`,
        sk: `${earliest}#${randomUUID()}`,
        ks,
        ...(retain > 0 ? { [RETAIN_ATTR]: retain + PAGE_RETAIN_MARGIN_S } : {}),
      };
      pages.push(page);
      for (const g of group) pageOf[g.i] = page;
    }
  }
  return {
    pages,
    heads: heads.map((h, i) => (listed[i] ? withListing(h, carried[i]) : h)),
    pageOf,
    carried,
  };
}

/** A dispatch item without its `gsi1` keys, with the listing it carries if any. */
export function withListing(
  head: Record<string, unknown>,
  listing: Record<string, unknown> | undefined,
): Record<string, unknown> {
  const { gsi1pk: _pk, gsi1sk: _sk, ...rest } = head;
  return listing ? { ...rest, ...listing } : rest;
}

/** The group member whose item is smallest (its listing then least often takes it past 1 KB). */
function smallest(
  group: { key: string; i: number }[],
  heads: readonly Record<string, unknown>[],
): { key: string; i: number } | undefined {
  let best: { key: string; i: number; bytes: number } | undefined;
  for (const g of group) {
    const bytes = itemBytes(heads[g.i]!);
    if (!best || bytes < best.bytes) best = { ...g, bytes };
  }
  return best;
}

/** A DynamoDB filter on `gsi1`'s projected attributes; `keep` must say the same of an item. */
export interface IndexFilter {
  FilterExpression?: string;
  ExpressionAttributeNames?: Record<string, string>;
  ExpressionAttributeValues?: Record<string, unknown>;
}

export interface AppRead {
  appId: string;
  /** Key bounds: `from` inclusive, `to` exclusive (ISO times, as the ledger API takes them). */
  from?: string | undefined;
  to?: string | undefined;
  /** Resume strictly after this key (`{createdAt}#{dispatchId}`) in the order read. */
  after?: string | undefined;
  desc?: boolean | undefined;
  /** Matching dispatches wanted. */
  want: number;
  /**
   * Most `gsi1` entries evaluated before a page may end short (a sparse filter would otherwise
   * read the whole range); it then ends at the last entry evaluated, a real dispatch's key.
   */
  maxEvaluated?: number | undefined;
  filter?: IndexFilter | undefined;
  keep?: ((d: Record<string, unknown>) => boolean) | undefined;
  signal?: AbortSignal | undefined;
}

export interface AppPage {
  /** Dispatches as `gsi1` shows them (implied fields back, `gsi1pk`/`gsi1sk` set), in order. */
  items: Record<string, unknown>[];
  /**
   * The key of a dispatch to resume after (its `pk`, `sk`, `gsi1pk`, `gsi1sk`), or undefined
   * when the range is read to its end.
   */
  next: Record<string, string> | undefined;
}

/** Items read per `gsi1` call when a filter may drop some. */
const FILTERED_READ = 100;
/** Pages read per call. */
const PAGES_READ = 100;

interface Source {
  /** Keys seen, in order, with their `gsi1` entry when it has one. */
  entries: Map<string, Record<string, unknown> | undefined>;
  /**
   * How far the read is complete: every key at or before it (in the order read) has been
   * seen; undefined when both sources are read to the end of the range.
   */
  frontier: string | undefined;
  /** The last `gsi1` key evaluated, when `gsi1` stopped there (a dispatch's key). */
  indexStop: string | undefined;
}

const before = (desc: boolean) => (a: string, b: string) => (desc ? a > b : a < b);

/**
 * A page of an app's dispatches from `gsi1` and the listing pages, merged in key order: what
 * `gsi1` alone gave before pages existed.
 */
export async function readAppDispatches(rt: Runtime, r: AppRead): Promise<AppPage> {
  const desc = r.desc ?? false;
  const items: Record<string, unknown>[] = [];
  const indexPk = `APP#${r.appId}`;
  let after = r.after;
  let evaluated = 0;
  for (;;) {
    const round = await readRound(
      rt,
      r,
      after,
      r.maxEvaluated ? r.maxEvaluated - evaluated : undefined,
    );
    evaluated += round.evaluated;
    const keys = [...round.src.entries.keys()].sort((a, b) =>
      before(desc)(a, b) ? -1 : a === b ? 0 : 1,
    );
    const resolved = new Map<string, Record<string, unknown> | null>();
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!;
      let d = round.src.entries.get(key);
      if (d === undefined) {
        if (!resolved.has(key))
          await resolve(rt, r.appId, keys.slice(i), round.src, resolved, r.want - items.length);
        d = resolved.get(key) ?? undefined;
        if (!d) continue;
      }
      const view = { ...impliedFields(d), gsi1pk: indexPk, gsi1sk: key };
      if (r.keep && !r.keep(view)) continue;
      items.push(view);
      if (items.length === r.want) return { items, next: keyOf(view) };
    }
    if (round.src.frontier === undefined) return { items, next: undefined };
    // Out of budget: a page may end short (even empty) where both sources are complete, when
    // that is a dispatch's key (the API's cursors are).
    const stop = round.src.indexStop;
    if (
      stop !== undefined &&
      stop === round.src.frontier &&
      evaluated >= (r.maxEvaluated ?? Infinity)
    )
      return { items, next: indexKey(indexPk, stop) };
    after = round.src.frontier;
  }
}

/** The key a page resumes after: the dispatch item's and its `gsi1` keys. */
function keyOf(view: Record<string, unknown>): Record<string, string> {
  return indexKey(String(view.gsi1pk), String(view.gsi1sk));
}

function indexKey(indexPk: string, key: string): Record<string, string> {
  return { ...dispatchKey(idOf(key)), gsi1pk: indexPk, gsi1sk: key };
}

/**
 * The paged dispatches among `keys` (from the first on, up to `want` + a margin at a time),
 * read by key: null for one that is not in the ledger or not this app's.
 */
async function resolve(
  rt: Runtime,
  appId: string,
  keys: string[],
  src: Source,
  resolved: Map<string, Record<string, unknown> | null>,
  want: number,
): Promise<void> {
  const wanted = keys.filter((k) => src.entries.get(k) === undefined && !resolved.has(k));
  const chunk = wanted.slice(0, Math.min(100, Math.max(want, 25)));
  const found = new Map<string, Record<string, unknown>>();
  for (const item of await readDispatchViews(rt, chunk.map(idOf))) {
    const d = impliedFields(item);
    if (d.appId === appId) found.set(String(d.dispatchId), d);
  }
  for (const k of chunk) {
    const d = found.get(idOf(k));
    // The page's key must be the item's own: a page names a dispatch by its creation time.
    resolved.set(k, d && `${String(d.createdAt)}#${idOf(k)}` === k ? d : null);
  }
}

interface Round {
  src: Source;
  evaluated: number;
}

/** One read of both sources beyond `after`, up to where both are complete. */
async function readRound(
  rt: Runtime,
  r: AppRead,
  after: string | undefined,
  budget: number | undefined,
): Promise<Round> {
  const later = before(r.desc ?? false);
  const within = (frontier: string | undefined, key: string) =>
    frontier === undefined || !later(frontier, key);
  const index = await readIndex(rt, r, after, budget);
  const { entries, indexStop } = index;
  const ids = new Set([...entries.keys()].map(idOf));
  let pageStop: string | undefined;
  for await (const read of readPages(rt, r, after)) {
    for (const key of read.keys) {
      const id = idOf(key);
      if (ids.has(id) || !inRange(key, r, after)) continue;
      ids.add(id);
      entries.set(key, undefined);
    }
    pageStop = read.stop;
    if (pageStop === undefined) break;
    // Enough read: the pages reach as far as `gsi1` did, or hold enough to fill the page.
    if (indexStop !== undefined && within(pageStop, indexStop)) break;
    const f = combined(indexStop, pageStop, later);
    let seen = 0;
    for (const key of entries.keys()) if (within(f, key)) seen++;
    if (seen >= Math.max(1, r.want)) break;
  }
  const frontier = combined(indexStop, pageStop, later);
  for (const key of [...entries.keys()]) if (!within(frontier, key)) entries.delete(key);
  return { src: { entries, frontier, indexStop }, evaluated: index.evaluated };
}

const idOf = (key: string) => key.slice(key.indexOf('#') + 1);

/** The bounds of the range beyond `after`, in key order (either may be open). */
function bounds(r: AppRead, after: string | undefined) {
  return r.desc ? { lo: r.from, hi: minKey(r.to, after) } : { lo: maxKey(r.from, after), hi: r.to };
}

/**
 * `gsi1` from `after` on: inclusive, `after` itself is dropped, and a limit of at least two
 * always evaluates a key beyond it when there is one.
 */
async function readIndex(
  rt: Runtime,
  r: AppRead,
  after: string | undefined,
  budget: number | undefined,
) {
  const { lo, hi } = bounds(r, after);
  const want = Math.max(1, r.want);
  const filtered = r.filter?.FilterExpression !== undefined;
  const idx = await rt.dynamo.doc.send(
    new QueryCommand({
      TableName: rt.tables.ledger,
      IndexName: 'gsi1',
      ...withFilter(rangeInput('gsi1pk', 'gsi1sk', `APP#${r.appId}`, lo, hi), r.filter),
      ScanIndexForward: !r.desc,
      Limit: Math.max(
        2,
        Math.min(budget ?? Infinity, filtered ? Math.max(want, FILTERED_READ) : want + 1),
      ),
    }),
    r.signal ? { abortSignal: r.signal } : {},
  );
  const entries = new Map<string, Record<string, unknown> | undefined>();
  for (const item of idx.Items ?? []) {
    const key = String(item.gsi1sk);
    if (isDispatchHead(item) && inRange(key, r, after)) entries.set(key, item);
  }
  return {
    entries,
    indexStop: idx.LastEvaluatedKey ? String(idx.LastEvaluatedKey.gsi1sk) : undefined,
    evaluated: idx.ScannedCount ?? 0,
  };
}

/**
 * The listings that may hold keys beyond `after` (page items, and carriers through the `pages`
 * index), a request at a time from whichever source is read least far: their keys, and how far
 * both are complete (undefined once the range is read to its end in both).
 */
async function* readPages(
  rt: Runtime,
  r: AppRead,
  after: string | undefined,
): AsyncGenerator<{ keys: string[]; stop: string | undefined }> {
  const later = before(r.desc ?? false);
  const sources = [readListings(rt, r, after, 'items'), readListings(rt, r, after, 'carriers')];
  const stops: (string | undefined)[] = [undefined, undefined];
  const done = [false, false];
  for (let round = 0; ; round++) {
    // Both at first; then the one whose frontier is the nearer, so the other's is not waited on.
    const which =
      round === 0 ? [0, 1] : [done[0] ? 1 : done[1] ? 0 : later(stops[0]!, stops[1]!) ? 1 : 0];
    const reads = await Promise.all(which.map((i) => sources[i]!.next()));
    const keys: string[] = [];
    which.forEach((i, n) => {
      const read = reads[n]!;
      if (read.done || read.value.stop === undefined) done[i] = true;
      if (!read.done) keys.push(...read.value.keys);
      stops[i] = read.done ? undefined : read.value.stop;
    });
    const stop = combined(done[0] ? undefined : stops[0], done[1] ? undefined : stops[1], later);
    yield { keys, stop };
    if (stop === undefined) return;
  }
}

/**
 * One source of listings a request at a time: the page items (`items`, consistent reads) or the
 * carriers' entries in the `pages` index (`carriers`; none when the table has no such index
 * yet). An entry at t is in a listing whose earliest is in (t - PAGE_SPAN_MS, t]; a bound's
 * millisecond is read whole (a listing's key ends with a uuid or a dispatch id).
 */
async function* readListings(
  rt: Runtime,
  r: AppRead,
  after: string | undefined,
  source: 'items' | 'carriers',
): AsyncGenerator<{ keys: string[]; stop: string | undefined }> {
  const { lo, hi } = bounds(r, after);
  const [pkName, skName] = source === 'items' ? ['pk', 'sk'] : ['appId', LISTING_ATTR];
  const range = rangeInput(
    pkName,
    skName,
    source === 'items' ? appPagesPk(r.appId) : r.appId,
    lo === undefined ? undefined : shifted(lo, -PAGE_SPAN_MS),
    hi === undefined ? undefined : shifted(hi, 1),
  );
  let start: Record<string, unknown> | undefined;
  do {
    let p;
    try {
      p = await rt.dynamo.doc.send(
        new QueryCommand({
          TableName: rt.tables.ledger,
          ...range,
          ...(source === 'items'
            ? { ProjectionExpression: 'sk, ks', ConsistentRead: true }
            : { IndexName: PAGES_INDEX }),
          ScanIndexForward: !r.desc,
          Limit: PAGES_READ,
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
        r.signal ? { abortSignal: r.signal } : {},
      );
    } catch (err) {
      // A table created before the index, which no writer writes carriers to until it is ACTIVE.
      if (source === 'carriers' && isMissingIndex(err)) return;
      throw err;
    }
    start = p.LastEvaluatedKey;
    // Unread listings start at or after the last read's earliest (ascending: complete below
    // it), or at or before it (descending: complete from it plus the span).
    const earliest = start ? String(start[skName]).split(/[#|]/, 1)[0]! : undefined;
    yield {
      keys: (p.Items ?? []).flatMap((page) =>
        source === 'items'
          ? ((page.ks as string[] | undefined) ?? [])
          : typeof page[LISTING_ATTR] === 'string'
            ? decodeListing(page[LISTING_ATTR])
            : [],
      ),
      stop:
        earliest === undefined ? undefined : r.desc ? shifted(earliest, PAGE_SPAN_MS) : earliest,
    };
  } while (start);
}

/**
 * DynamoDB's answer to a query of an index the table does not have ("The table does not have
 * the specified index", DynamoDB Local and AWS) or cannot read yet (AWS, while it is backfilled).
 */
function isMissingIndex(err: unknown): boolean {
  const e = err as { name?: string; message?: string };
  return (
    e.name === 'ValidationException' &&
    /does not have the specified index|backfilling global secondary index/i.test(e.message ?? '')
  );
}

/** The nearer of two frontiers (undefined: read to the end). */
function combined(
  a: string | undefined,
  b: string | undefined,
  later: (x: string, y: string) => boolean,
): string | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return later(a, b) ? a : b;
}

function inRange(key: string, r: AppRead, after: string | undefined): boolean {
  if (r.from !== undefined && key < r.from) return false;
  if (r.to !== undefined && key >= r.to) return false;
  if (after === undefined) return true;
  return r.desc ? key < after : key > after;
}

const maxKey = (a: string | undefined, b: string | undefined) =>
  a === undefined ? b : b === undefined ? a : a > b ? a : b;
const minKey = (a: string | undefined, b: string | undefined) =>
  a === undefined ? b : b === undefined ? a : a < b ? a : b;

/** A key condition on `pk` and a sort key between `lo` and `hi` (both inclusive; either open). */
function rangeInput(pkName: string, skName: string, pk: string, lo?: string, hi?: string) {
  const names: Record<string, string> = { '#kp': pkName };
  const values: Record<string, unknown> = { ':kp': pk };
  let cond = '#kp = :kp';
  if (lo !== undefined || hi !== undefined) names['#ks'] = skName;
  if (lo !== undefined) values[':lo'] = lo;
  if (hi !== undefined) values[':hi'] = hi;
  if (lo !== undefined && hi !== undefined) cond += ' AND #ks BETWEEN :lo AND :hi';
  else if (lo !== undefined) cond += ' AND #ks >= :lo';
  else if (hi !== undefined) cond += ' AND #ks <= :hi';
  return {
    KeyConditionExpression: cond,
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
  };
}

function withFilter(
  input: ReturnType<typeof rangeInput>,
  f: IndexFilter | undefined,
): ReturnType<typeof rangeInput> & { FilterExpression?: string } {
  if (!f?.FilterExpression) return input;
  return {
    ...input,
    FilterExpression: f.FilterExpression,
    ExpressionAttributeNames: { ...input.ExpressionAttributeNames, ...f.ExpressionAttributeNames },
    ExpressionAttributeValues: {
      ...input.ExpressionAttributeValues,
      ...f.ExpressionAttributeValues,
    },
  };
}
