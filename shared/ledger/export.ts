import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { ComplianceFlag } from '../compliance/flags.js';
import type { Runtime } from '../runtime.js';
import { getDispatch, type DispatchWithAttempts } from './queries.js';
import { isDispatchHead } from './dispatches.js';
import { impliedFields } from './packed.js';
import { principalDispatches } from './principal.js';

/**
 * Reading an app's dispatches in event-time order for the auditors' ledger API: filtered pages
 * (gsi1 by app and time; one principal's from principal.ts, gsi2 and its consents) and a
 * constant-memory iterator for the export. Both sort on `{createdAt}#{dispatchId}`, so on gsi1 a
 * time range is a key condition (cost grows with the range, not the table); event and flag are
 * filters.
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

/** Items read per DynamoDB call when a filter may drop some (fewer calls for sparse filters). */
const FILTERED_READ = 100;

function queryInput(q: DispatchQuery, ref: IndexRef) {
  const names: Record<string, string> = { '#pk': `${ref.index}pk` };
  const values: Record<string, unknown> = { ':pk': ref.pk };
  let key = '#pk = :pk';
  // DynamoDB refuses names an expression does not use.
  if (q.from !== undefined || q.to !== undefined) names['#sk'] = `${ref.index}sk`;
  // Keys are `{createdAt}#…`: every key at `to` sorts after `to` itself, so BETWEEN and `<`
  // exclude it, and every key at `from` sorts after `from`, so `>=` includes it.
  if (q.from !== undefined) values[':from'] = q.from;
  if (q.to !== undefined) values[':to'] = q.to;
  if (q.from !== undefined && q.to !== undefined) key += ' AND #sk BETWEEN :from AND :to';
  else if (q.from !== undefined) key += ' AND #sk >= :from';
  else if (q.to !== undefined) key += ' AND #sk < :to';
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
  return {
    KeyConditionExpression: key,
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
    ...(filters.length ? { FilterExpression: filters.join(' AND ') } : {}),
  };
}

/**
 * One page of matching dispatches, reading as many DynamoDB pages as it takes to find `limit`
 * matches, up to `maxEvaluated` evaluated items. When a DynamoDB page holds more matches than
 * are wanted, the page ends at the last one kept and the next starts right after it.
 */
export async function readDispatchPage(
  rt: Runtime,
  q: DispatchQuery,
  r: PageRequest,
): Promise<DispatchPage> {
  const ref = indexOf(q);
  if (ref.index === 'gsi2') return readPrincipalPage(rt, { ...q, referenceId: q.referenceId! }, r);
  const input = queryInput(q, ref);
  const filtered = input.FilterExpression !== undefined;
  const items: Record<string, unknown>[] = [];
  let start: IndexKey | undefined = r.startKey;
  let evaluated = 0;
  for (;;) {
    const want = r.limit - items.length;
    const budget = r.maxEvaluated - evaluated;
    const res = await rt.dynamo.doc.send(
      new QueryCommand({
        TableName: rt.tables.ledger,
        IndexName: ref.index,
        ...input,
        Limit: Math.max(1, Math.min(budget, filtered ? Math.max(want, FILTERED_READ) : want)),
        ExclusiveStartKey: start,
      }),
      r.signal ? { abortSignal: r.signal } : {},
    );
    evaluated += res.ScannedCount ?? 0;
    // Only dispatch items carry index keys; the check keeps any other entry out regardless.
    // With what a packed item leaves implied put back (packed.ts).
    const got = (res.Items ?? []).filter((i) => isDispatchHead(i)).map((i) => impliedFields(i));
    if (got.length > want) {
      items.push(...got.slice(0, want));
      return { items, nextKey: keyAfter(items[items.length - 1]!, ref.index) };
    }
    items.push(...got);
    start = res.LastEvaluatedKey as IndexKey | undefined;
    if (!start) return { items, nextKey: undefined };
    if (items.length >= r.limit || evaluated >= r.maxEvaluated) return { items, nextKey: start };
  }
}

/**
 * A page of one principal's dispatches (principal.ts: those of `gsi2` and those found through
 * the principal's consents), filtered as `queryInput` filters the index and resumed after the
 * start key's `gsi2sk`. The principal's dispatches are read whole for each page: a person's.
 */
async function readPrincipalPage(
  rt: Runtime,
  q: DispatchQuery & { referenceId: string },
  r: PageRequest,
): Promise<DispatchPage> {
  const after = r.startKey?.gsi2sk;
  const matching = (await principalDispatches(rt, q.appId, q.referenceId)).filter((d) => {
    const key = String(d.gsi2sk);
    if (after !== undefined && key <= after) return false;
    if (q.from !== undefined && key < q.from) return false;
    if (q.to !== undefined && key >= q.to) return false;
    if (q.event !== undefined && d.event !== q.event) return false;
    if (q.flag === null) return d.complianceFlag === null || d.complianceFlag === undefined;
    return q.flag === undefined || d.complianceFlag === q.flag;
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
  rt: Runtime,
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
