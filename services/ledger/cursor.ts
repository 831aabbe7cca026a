import { AppError } from '../../shared/errors.js';
import { canonicalJson, sha256Hex } from '../../shared/domain/ledger/hash.js';
import { indexOf, type DispatchQuery, type IndexKey } from '../../shared/ledger/export.js';
import { isDispatchHead } from '../../shared/storage/ledger/dispatches.js';

/**
 * Page cursors: base64url JSON of the DynamoDB start key plus a digest of the query it belongs
 * to (app, referenceId, event, flag, from, to). A cursor replayed with other filters or by
 * another app is refused (422) instead of silently paging a different result set. The digest
 * is not a secret: what makes a forged cursor harmless is that its key must lie inside the
 * partition and time range of the caller's own query, and DynamoDB's key condition still
 * bounds what is read.
 */

const VERSION = 1;

const invalid = (message: string) =>
  new AppError('SVC_VALIDATION_FAILED', 'The cursor is not valid', {
    errors: [{ path: '/cursor', message }],
  });

function binding(q: DispatchQuery): string {
  return sha256Hex(
    canonicalJson({
      appId: q.appId,
      referenceId: q.referenceId ?? null,
      event: q.event ?? null,
      // undefined (no filter) and null (flag = none) are different queries.
      flag: q.flag === undefined ? '*' : q.flag,
      from: q.from ?? null,
      to: q.to ?? null,
    }),
  ).slice(0, 32);
}

export function encodeCursor(q: DispatchQuery, key: IndexKey): string {
  return Buffer.from(JSON.stringify({ v: VERSION, q: binding(q), k: key })).toString('base64url');
}

const DISPATCH_PK = /^DSP#(dsp_[0-9A-HJKMNP-TV-Z]{26})$/;

/** The start key of a cursor, checked against the query it is used with. */
export function decodeCursor(q: DispatchQuery, cursor: string): IndexKey {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw invalid('not a cursor returned by this API');
  }
  const c = parsed as { v?: unknown; q?: unknown; k?: unknown } | null;
  if (!c || typeof c !== 'object' || c.v !== VERSION || typeof c.q !== 'string')
    throw invalid('not a cursor returned by this API');
  if (c.q !== binding(q))
    throw invalid('belongs to another query: repeat the filters of the request that returned it');
  const { index, pk } = indexOf(q);
  const k = c.k as Record<string, unknown> | null;
  const names = ['pk', 'sk', `${index}pk`, `${index}sk`];
  const wellFormed =
    !!k &&
    typeof k === 'object' &&
    Object.keys(k).length === names.length &&
    names.every((n) => typeof k[n] === 'string');
  if (!wellFormed) throw invalid('not a cursor returned by this API');
  const key = k as IndexKey;
  const sortKey = key[`${index}sk`]!;
  const id = DISPATCH_PK.exec(key.pk!)?.[1];
  const inRange =
    (q.from === undefined || sortKey >= q.from) && (q.to === undefined || sortKey < q.to);
  if (
    key[`${index}pk`] !== pk ||
    !isDispatchHead(key) ||
    !id ||
    !sortKey.endsWith(`#${id}`) ||
    !inRange
  )
    throw invalid('not a cursor returned by this API');
  return key;
}
