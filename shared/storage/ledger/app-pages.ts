import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { LedgerDeps } from './deps.js';
import { dispatchKey, isDispatchHead } from './dispatches.js';
import { impliedFields } from './packed.js';
import { readDispatchViews } from './principal.js';
import { RETAIN_ATTR } from '../../domain/ledger/retention.js';
import { itemBytes } from '../billing.js';

/**
 * An app's dispatches by event time, key `{createdAt}#{dispatchId}`, from two sources:
 *
 * - `gsi1` (`APP#{appId}` / key): a dispatch the dispatcher wrote without others of its app,
 *   or in a group none of whose records may carry, and every dispatch that changed after it was
 *   written (dispatches.ts, `appIndexUpdate`);
 * - **carriers**: of a group of one app's dispatches the dispatcher writes in one batch
 *   (`planListings`), one dispatch item holds the group's listing in `lk` (`encodeListing`: the
 *   earliest `createdAt`, then each entry's milliseconds after it and its id, itself included)
 *   and none has a `gsi1` entry. The ledger's sparse `pages` index (keys only) has the carrier
 *   by `appId` and `lk`, so listings sort by their earliest time. No item beyond the dispatches.
 *
 * Every reader of an app's dispatches (the ledger API's list and export, the console, the
 * requeue, the checkpoint sealer) reads both through `readAppDispatches`.
 *
 * - A listing's entries lie less than `LISTING_SPAN_MS` after its earliest, so a time range is
 *   found by a key condition widened by that span.
 * - Only a record with no SLA check to write first may carry: the carrier goes in the batch's
 *   first phase, before the dispatch items it names, so a dispatch item without a `gsi1` entry
 *   always has its carrier. A listing may name a dispatch that never landed (its write was cut
 *   short and redone elsewhere, or not at all): readers read the named items by key
 *   (BatchGetItem, consistent) and skip the missing. A dispatch in `gsi1` and a listing is
 *   listed once.
 * - A listing holds keys alone: no personal data, nothing the erasure redacts.
 * - Retention: a carrier is kept until the latest `retainUntil` its group was written with
 *   (seconds apart at most); a named dispatch that changes later moves its own retention on and
 *   puts itself in `gsi1` with that change, so whatever outlives its carrier lists itself.
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
 * (not an ISO time as `toISOString` writes it): such a group keeps its `gsi1` entries.
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

/** Most time between the earliest and the latest entry of a listing (exclusive). */
export const LISTING_SPAN_MS = 1_000;
/** Most entries a listing names, so its carrier stays a small item. */
export const LISTING_ENTRIES = 14;

const INDEX_PK = /^APP#(.+)$/;

/** The time part of a `{createdAt}#{dispatchId}` key (or of a bare ISO time). */
const timeOf = (key: string) => Date.parse(key.split('#', 1)[0]!);

/** An ISO key bound moved by `ms`; a bound that is no time (`0000`, `9999`) stays. */
function shifted(bound: string, ms: number): string {
  const t = timeOf(bound);
  return Number.isFinite(t) ? new Date(t + ms).toISOString() : bound;
}

export interface ListingPlan {
  /**
   * The dispatch items as they are then written: those a carrier names without `gsi1` keys, a
   * carrier with its listing (`carried`), the others as they came.
   */
  heads: Record<string, unknown>[];
  /** The listing a carrier holds (`lk`, and its `retainUntil` when later), by index. */
  carried: (Record<string, unknown> | undefined)[];
}

/**
 * Carriers for a batch of new dispatch items (`heads`, as `dispatchItem` builds them): their
 * keys grouped by app, in key order, cut at `LISTING_ENTRIES` entries or `LISTING_SPAN_MS`. A
 * group is carried by its smallest member `mayCarry` allows, which must be written before the
 * others (`carried`). A group of one, or one with no member allowed, keeps its `gsi1` entries.
 */
export function planListings(
  heads: readonly Record<string, unknown>[],
  mayCarry: (i: number) => boolean,
): ListingPlan {
  const byApp = new Map<string, { key: string; i: number }[]>();
  heads.forEach((h, i) => {
    if (typeof h.gsi1pk !== 'string' || typeof h.gsi1sk !== 'string') return;
    if (!INDEX_PK.test(h.gsi1pk) || !Number.isFinite(timeOf(h.gsi1sk))) return;
    const list = byApp.get(h.gsi1pk) ?? [];
    list.push({ key: h.gsi1sk, i });
    byApp.set(h.gsi1pk, list);
  });
  const out = [...heads];
  const carried: (Record<string, unknown> | undefined)[] = heads.map(() => undefined);
  for (const list of byApp.values()) {
    list.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    for (let start = 0; start < list.length;) {
      const t0 = timeOf(list[start]!.key);
      let end = start + 1;
      while (
        end < list.length &&
        end - start < LISTING_ENTRIES &&
        timeOf(list[end]!.key) - t0 < LISTING_SPAN_MS
      )
        end++;
      const group = list.slice(start, end);
      start = end;
      if (group.length < 2) continue;
      const lk = encodeListing(group.map((g) => g.key));
      const allowed = group.filter((g) => mayCarry(g.i));
      const by = lk === undefined ? undefined : smallest(allowed, heads);
      if (!by) continue;
      // Kept as long as the longest kept of its group as written (seconds apart at most).
      const retain = Math.max(...group.map((g) => Number(heads[g.i]![RETAIN_ATTR]) || 0));
      const own = Number(heads[by.i]![RETAIN_ATTR]) || 0;
      carried[by.i] = { [LISTING_ATTR]: lk, ...(retain > own ? { [RETAIN_ATTR]: retain } : {}) };
      for (const g of group) out[g.i] = withListing(heads[g.i]!, carried[g.i]);
    }
  }
  return { heads: out, carried };
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
/** Carriers read per `pages` call. */
const LISTINGS_READ = 100;

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
 * A page of an app's dispatches from `gsi1` and the carriers' listings, merged in key order,
 * each dispatch once.
 */
export async function readAppDispatches(db: LedgerDeps, r: AppRead): Promise<AppPage> {
  const desc = r.desc ?? false;
  const items: Record<string, unknown>[] = [];
  const indexPk = `APP#${r.appId}`;
  let after = r.after;
  let evaluated = 0;
  for (;;) {
    const round = await readRound(
      db,
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
          await resolve(db, r.appId, keys.slice(i), round.src, resolved, r.want - items.length);
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
 * The listed dispatches among `keys` (from the first on, up to `want` + a margin at a time),
 * read by key: null for one that is not in the ledger or not this app's.
 */
async function resolve(
  db: LedgerDeps,
  appId: string,
  keys: string[],
  src: Source,
  resolved: Map<string, Record<string, unknown> | null>,
  want: number,
): Promise<void> {
  const wanted = keys.filter((k) => src.entries.get(k) === undefined && !resolved.has(k));
  const chunk = wanted.slice(0, Math.min(100, Math.max(want, 25)));
  const found = new Map<string, Record<string, unknown>>();
  for (const item of await readDispatchViews(db, chunk.map(idOf))) {
    const d = impliedFields(item);
    if (d.appId === appId) found.set(String(d.dispatchId), d);
  }
  for (const k of chunk) {
    const d = found.get(idOf(k));
    // The listing's key must be the item's own: it names a dispatch by its creation time.
    resolved.set(k, d && `${String(d.createdAt)}#${idOf(k)}` === k ? d : null);
  }
}

interface Round {
  src: Source;
  evaluated: number;
}

/** One read of both sources beyond `after`, up to where both are complete. */
async function readRound(
  db: LedgerDeps,
  r: AppRead,
  after: string | undefined,
  budget: number | undefined,
): Promise<Round> {
  const later = before(r.desc ?? false);
  const within = (frontier: string | undefined, key: string) =>
    frontier === undefined || !later(frontier, key);
  const index = await readIndex(db, r, after, budget);
  const { entries, indexStop } = index;
  const ids = new Set([...entries.keys()].map(idOf));
  let listingStop: string | undefined;
  for await (const read of readListings(db, r, after)) {
    for (const key of read.keys) {
      const id = idOf(key);
      if (ids.has(id) || !inRange(key, r, after)) continue;
      ids.add(id);
      entries.set(key, undefined);
    }
    listingStop = read.stop;
    if (listingStop === undefined) break;
    // Enough read: the listings reach as far as `gsi1` did, or hold enough to fill the page.
    if (indexStop !== undefined && within(listingStop, indexStop)) break;
    const f = combined(indexStop, listingStop, later);
    let seen = 0;
    for (const key of entries.keys()) if (within(f, key)) seen++;
    if (seen >= Math.max(1, r.want)) break;
  }
  const frontier = combined(indexStop, listingStop, later);
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
  db: LedgerDeps,
  r: AppRead,
  after: string | undefined,
  budget: number | undefined,
) {
  const { lo, hi } = bounds(r, after);
  const want = Math.max(1, r.want);
  const filtered = r.filter?.FilterExpression !== undefined;
  const idx = await db.dynamo.doc.send(
    new QueryCommand({
      TableName: db.tables.ledger,
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
 * The carriers' listings that may hold keys beyond `after`, a `pages` request at a time: their
 * keys, and how far they are complete (undefined once the range is read to its end). An entry
 * at t is in a listing whose earliest is in (t - LISTING_SPAN_MS, t]; a bound's millisecond is
 * read whole (a listing goes on past its earliest time).
 */
async function* readListings(
  db: LedgerDeps,
  r: AppRead,
  after: string | undefined,
): AsyncGenerator<{ keys: string[]; stop: string | undefined }> {
  const { lo, hi } = bounds(r, after);
  const range = rangeInput(
    'appId',
    LISTING_ATTR,
    r.appId,
    lo === undefined ? undefined : shifted(lo, -LISTING_SPAN_MS),
    hi === undefined ? undefined : shifted(hi, 1),
  );
  let start: Record<string, unknown> | undefined;
  do {
    const p = await db.dynamo.doc.send(
      new QueryCommand({
        TableName: db.tables.ledger,
        IndexName: PAGES_INDEX,
        ...range,
        ScanIndexForward: !r.desc,
        Limit: LISTINGS_READ,
        ...(start ? { ExclusiveStartKey: start } : {}),
      }),
      r.signal ? { abortSignal: r.signal } : {},
    );
    start = p.LastEvaluatedKey;
    // Unread listings start at or after the last read's earliest (ascending: complete below
    // it), or at or before it (descending: complete from it plus the span).
    const earliest = start ? String(start[LISTING_ATTR]).split('|', 1)[0]! : undefined;
    yield {
      keys: (p.Items ?? []).flatMap((c) =>
        typeof c[LISTING_ATTR] === 'string' ? decodeListing(c[LISTING_ATTR]) : [],
      ),
      stop:
        earliest === undefined ? undefined : r.desc ? shifted(earliest, LISTING_SPAN_MS) : earliest,
    };
  } while (start);
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
