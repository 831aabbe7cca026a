import { QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { TableNames } from '../../../infra/definitions/tables.js';
import { AppError } from '../../errors.js';

/** What a listing reads through: the document client and the `entities` table's name. */
export interface ListDeps {
  dynamo: { doc: DynamoDBDocumentClient };
  tables: Pick<TableNames, 'entities'>;
}

/**
 * One page of an app's duty records (grievances, breaches) from an `entities` index whose sort
 * key is `{createdAt}#{id}`: a time range is a key condition, other filters are filter
 * expressions. Cursors are the start key, refused unless they point into the same partition
 * (so a cursor can never reach another app's or another principal's records).
 */

export interface ListRequest {
  index: 'gsi1' | 'gsi2';
  /** The index partition, which starts with `APP#{appId}#`. */
  pk: string;
  from?: string | undefined;
  to?: string | undefined;
  /** Attribute equalities; `null` matches a missing or null attribute. */
  equals?: Record<string, string | null | undefined>;
  limit: number;
  cursor?: string | undefined;
  /** Newest first (the principal's own list) or oldest first (app and auditor). */
  newestFirst?: boolean;
}

const invalidCursor = () =>
  new AppError('SVC_VALIDATION_FAILED', 'The cursor is not valid', {
    errors: [{ path: '/cursor', message: 'not a cursor returned by this API for this list' }],
  });

function decode(r: ListRequest): Record<string, string> | undefined {
  if (r.cursor === undefined) return undefined;
  let k: unknown;
  try {
    k = JSON.parse(Buffer.from(r.cursor, 'base64url').toString('utf8'));
  } catch {
    throw invalidCursor();
  }
  const key = k as Record<string, unknown> | null;
  const names = ['pk', 'sk', `${r.index}pk`, `${r.index}sk`];
  if (
    !key ||
    typeof key !== 'object' ||
    Object.keys(key).length !== names.length ||
    !names.every((n) => typeof key[n] === 'string') ||
    key[`${r.index}pk`] !== r.pk ||
    (r.from !== undefined && key[`${r.index}sk`]! < r.from) ||
    (r.to !== undefined && key[`${r.index}sk`]! >= r.to)
  )
    throw invalidCursor();
  return key as Record<string, string>;
}

const encode = (k: Record<string, unknown>) => Buffer.from(JSON.stringify(k)).toString('base64url');

/** Most items one page evaluates, so a sparse filter cannot turn one request into a scan. */
const MAX_EVALUATED = 1_000;

export async function listPage(
  rt: ListDeps,
  r: ListRequest,
): Promise<{ items: Record<string, unknown>[]; nextCursor: string | null }> {
  if (r.from !== undefined && r.to !== undefined && r.to <= r.from)
    throw new AppError('SVC_VALIDATION_FAILED', 'The query is not valid', {
      errors: [{ path: '/to', message: 'must be after from' }],
    });
  const names: Record<string, string> = { '#pk': `${r.index}pk` };
  const values: Record<string, unknown> = { ':pk': r.pk };
  let key = '#pk = :pk';
  if (r.from !== undefined || r.to !== undefined) names['#sk'] = `${r.index}sk`;
  if (r.from !== undefined) values[':from'] = r.from;
  if (r.to !== undefined) values[':to'] = r.to;
  if (r.from !== undefined && r.to !== undefined) key += ' AND #sk BETWEEN :from AND :to';
  else if (r.from !== undefined) key += ' AND #sk >= :from';
  else if (r.to !== undefined) key += ' AND #sk < :to';
  const filters: string[] = [];
  Object.entries(r.equals ?? {}).forEach(([attr, v], i) => {
    if (v === undefined) return;
    names[`#f${i}`] = attr;
    if (v === null) {
      values[':nullType'] = 'NULL';
      filters.push(`(attribute_not_exists(#f${i}) OR attribute_type(#f${i}, :nullType))`);
    } else {
      values[`:f${i}`] = v;
      filters.push(`#f${i} = :f${i}`);
    }
  });
  const items: Record<string, unknown>[] = [];
  let start = decode(r);
  let evaluated = 0;
  for (;;) {
    const want = r.limit - items.length;
    const res = await rt.dynamo.doc.send(
      new QueryCommand({
        TableName: rt.tables.entities,
        IndexName: r.index,
        KeyConditionExpression: key,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
        ...(filters.length ? { FilterExpression: filters.join(' AND ') } : {}),
        ScanIndexForward: !r.newestFirst,
        Limit: Math.max(1, Math.min(MAX_EVALUATED - evaluated, filters.length ? 100 : want)),
        ExclusiveStartKey: start,
      }),
    );
    evaluated += res.ScannedCount ?? 0;
    const got = res.Items ?? [];
    if (got.length > want) {
      items.push(...got.slice(0, want));
      const last = items[items.length - 1]!;
      const next = Object.fromEntries(
        ['pk', 'sk', `${r.index}pk`, `${r.index}sk`].map((n) => [n, last[n]]),
      );
      return { items, nextCursor: encode(next) };
    }
    items.push(...got);
    start = res.LastEvaluatedKey as Record<string, string> | undefined;
    if (!start) return { items, nextCursor: null };
    if (items.length >= r.limit || evaluated >= MAX_EVALUATED)
      return { items, nextCursor: encode(start) };
  }
}

const STORAGE_ATTRS = ['pk', 'sk', 'gsi1pk', 'gsi1sk', 'gsi2pk', 'gsi2sk', 'version'];

/** A stored item without its storage keys and lock version: what the APIs show. */
export function withoutKeys<T>(item: Record<string, unknown>): T {
  const out = { ...item };
  for (const k of STORAGE_ATTRS) delete out[k];
  return out as T;
}
