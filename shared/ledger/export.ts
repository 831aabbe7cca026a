import type { ComplianceFlag } from '../domain/compliance/flags.js';
import type { WithLedger } from './port.js';
import { getDispatch, type DispatchWithAttempts } from './queries.js';
import { type IndexFilter } from '../storage/ledger/app-pages.js';

/**
 * Reading an app's dispatches in event-time order for the auditors' ledger API: filtered pages
 * (an app's from app-pages.ts, gsi1 and its carriers; one principal's from principal.ts,
 * gsi2 and its consents) and a constant-memory iterator for the export. Both sort on
 * `{createdAt}#{dispatchId}`, so a time range is a key condition (cost grows with the range,
 * not the table); event and flag are filters.
 */

export interface DispatchQuery {
  appId: string;
  /** Selects one principal's dispatches (principal.ts); without it gsi1 (the whole app). */
  referenceId?: string | undefined;
  /** ISO times (`toISOString` form) on the event's createdAt: from inclusive, to exclusive. */
  from?: string | undefined;
  to?: string | undefined;
  event?: string | undefined;
  /** `null` selects dispatches that carry no flag (yet). */
  flag?: ComplianceFlag | null | undefined;
}

/** A DynamoDB start key on one of the ledger's indexes: pk, sk and the index's two keys. */
export type IndexKey = Record<string, string>;

export interface IndexRef {
  index: 'gsi1' | 'gsi2';
  /** The partition value this query reads; a start key from another partition is refused. */
  pk: string;
}

export function indexOf(q: Pick<DispatchQuery, 'appId' | 'referenceId'>): IndexRef {
  return q.referenceId
    ? { index: 'gsi2', pk: `APP#${q.appId}#REF#${q.referenceId}` }
    : { index: 'gsi1', pk: `APP#${q.appId}` };
}

/** The start key that resumes a query right after `item` (an item read from `index`). */
export function keyAfter(item: Record<string, unknown>, index: IndexRef['index']): IndexKey {
  return {
    pk: String(item.pk),
    sk: String(item.sk),
    [`${index}pk`]: String(item[`${index}pk`]),
    [`${index}sk`]: String(item[`${index}sk`]),
  };
}

export interface PageRequest {
  startKey?: IndexKey | undefined;
  /** Matching items wanted. */
  limit: number;
  /**
   * Most items DynamoDB may evaluate for this page. A sparse filter would otherwise read the
   * whole range in one request; with it a page may come back short (even empty) with a key.
   */
  maxEvaluated: number;
  signal?: AbortSignal | undefined;
}

export interface DispatchPage {
  /** Raw dispatch items (storage keys included), in index order. */
  items: Record<string, unknown>[];
  /** Where the next page starts; undefined when the range is exhausted. */
  nextKey: IndexKey | undefined;
}

/** The query's event and flag as a DynamoDB filter on the index's projected attributes. */
function filterInput(q: DispatchQuery): IndexFilter | undefined {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  const filters: string[] = [];
  if (q.event !== undefined) {
    names['#event'] = 'event';
    values[':event'] = q.event;
    filters.push('#event = :event');
  }
  if (q.flag !== undefined) {
    names['#flag'] = 'complianceFlag';
    if (q.flag === null) {
      values[':nullType'] = 'NULL';
      filters.push('(attribute_not_exists(#flag) OR attribute_type(#flag, :nullType))');
    } else {
      values[':flag'] = q.flag;
      filters.push('#flag = :flag');
    }
  }
  if (filters.length === 0) return undefined;
  return {
    FilterExpression: filters.join(' AND '),
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
  };
}

/** What `filterInput` says of an item, for dispatches read by key. */
const matches = (q: DispatchQuery) => (d: Record<string, unknown>) => {
  if (q.event !== undefined && d.event !== q.event) return false;
  if (q.flag === null) return d.complianceFlag === null || d.complianceFlag === undefined;
  return q.flag === undefined || d.complianceFlag === q.flag;
};

/**
 * One page of matching dispatches (app-pages.ts: `gsi1` and the carriers, or principal.ts),
 * evaluating at most `maxEvaluated` index entries past what it needs: a sparse filter may then
 * end a page short, even empty, with a key that moves forward.
 */
export async function readDispatchPage(
  rt: WithLedger,
  q: DispatchQuery,
  r: PageRequest,
): Promise<DispatchPage> {
  const ref = indexOf(q);
  if (ref.index === 'gsi2') return readPrincipalPage(rt, { ...q, referenceId: q.referenceId! }, r);
  const page = await rt.ledger.readAppDispatches({
    appId: q.appId,
    from: q.from,
    to: q.to,
    after: r.startKey?.gsi1sk,
    want: r.limit,
    maxEvaluated: r.maxEvaluated,
    filter: filterInput(q),
    keep: matches(q),
    signal: r.signal,
  });
  return { items: page.items, nextKey: page.next };
}

/**
 * A page of one principal's dispatches (principal.ts: those of `gsi2` and those found through
 * the principal's consents), filtered as `queryInput` filters the index and resumed after the
 * start key's `gsi2sk`. The principal's dispatches are read whole for each page: a person's.
 */
async function readPrincipalPage(
  rt: WithLedger,
  q: DispatchQuery & { referenceId: string },
  r: PageRequest,
): Promise<DispatchPage> {
  const after = r.startKey?.gsi2sk;
  const keep = matches(q);
  const matching = (await rt.ledger.principalDispatches(q.appId, q.referenceId)).filter((d) => {
    const key = String(d.gsi2sk);
    if (after !== undefined && key <= after) return false;
    if (q.from !== undefined && key < q.from) return false;
    if (q.to !== undefined && key >= q.to) return false;
    return keep(d);
  });
  const items = matching.slice(0, Math.max(1, r.limit));
  return {
    items,
    nextKey:
      matching.length > items.length ? keyAfter(items[items.length - 1]!, 'gsi2') : undefined,
  };
}

export type ExportedDispatch = DispatchWithAttempts;

/**
 * Every dispatch of an app in a time range, oldest first, each with its entries (attempts,
 * postbacks, flags: whatever getDispatch returns). Memory stays bounded by one page: a page's
 * details are read together, yielded in order, and dropped before the next page is read.
 * Stops between pages once `signal` is aborted.
 */
export async function* exportDispatches(
  rt: WithLedger,
  q: DispatchQuery & { from: string; to: string },
  o: { pageSize?: number; signal?: AbortSignal } = {},
): AsyncGenerator<ExportedDispatch> {
  const pageSize = o.pageSize ?? 25;
  let start: IndexKey | undefined;
  do {
    const page = await readDispatchPage(rt, q, {
      startKey: start,
      limit: pageSize,
      maxEvaluated: pageSize,
      signal: o.signal,
    });
    const details = await Promise.all(page.items.map((i) => getDispatch(rt, String(i.dispatchId))));
    for (const d of details) {
      if (o.signal?.aborted) return;
      // A dispatch is never deleted; undefined would mean it vanished between two reads.
      if (d) yield d;
    }
    start = page.nextKey;
  } while (start && !o.signal?.aborted);
}
