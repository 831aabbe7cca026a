import { DISPATCH_VIEW_ATTRS } from '../../../infra/definitions/tables.js';
import { keys } from '../consents/repository.js';
import { creationEventIds } from '../../domain/ids.js';
import type { LedgerDeps } from './deps.js';
import { queryAll } from '../query.js';
import {
  dispatchIdFor,
  isDispatchHead,
  readDispatchItems,
  principalIndexKeys,
  webhookEndpoint,
} from './dispatches.js';
import { impliedFields } from './packed.js';

/**
 * One principal's dispatches, as the ledger's listings by principal show them. Two sources:
 *
 * - `gsi2` (by principal, then event time): every dispatch of an event that is not one of a
 *   consent's creation events (a withdrawal, an expiry, a reminder…);
 * - the principal's transactions: a creation event's id follows from its transaction's id and
 *   `createdAt` (ids.ts, `creationEventIds`), and a dispatch's id from its event's and the app's
 *   webhook (`dispatchIdFor`), so the dispatch items are read by key (BatchGetItem, consistent).
 *   These have no `gsi2` entry (`foundThroughConsent`), which saves each a write unit: the
 *   commonest dispatches, two for each new consent.
 *
 * Transactions are never deleted (the erasure scrubs them: consent/scrub.ts), so a dispatch
 * stays listed as long as the ledger keeps it. Only items of this app and this principal are
 * returned (a derived key is checked against the item it reads). Sorted by event time, then
 * dispatch id (the `gsi2` order), each with what a packed item leaves implied put back and its
 * `gsi2pk`/`gsi2sk` (real or, for one found through its consent, as they would be), so a page
 * can end after any of them. Memory and reads grow with the principal's dispatches: a person's,
 * not an app's.
 */
export async function principalDispatches(
  db: LedgerDeps,
  appId: string,
  referenceId: string,
): Promise<Record<string, unknown>[]> {
  const { pk } = keys.principal(appId, referenceId);
  const [indexed, transactions] = await Promise.all([
    queryAll(db.dynamo.doc, {
      TableName: db.tables.ledger,
      IndexName: 'gsi2',
      KeyConditionExpression: 'gsi2pk = :pk',
      ExpressionAttributeValues: { ':pk': pk },
    }),
    queryAll(db.dynamo.doc, {
      TableName: db.tables.entities,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :txn)',
      ExpressionAttributeValues: { ':pk': pk, ':txn': 'TXN#' },
      ProjectionExpression: 'transactionId, createdAt',
      ConsistentRead: true,
    }),
  ]);
  const byId = new Map<string, Record<string, unknown>>();
  for (const item of indexed) {
    if (!isDispatchHead(item)) continue;
    const d = impliedFields(item);
    byId.set(String(d.dispatchId), d);
  }
  const endpoint = webhookEndpoint(appId);
  const wanted = new Set<string>();
  for (const t of transactions) {
    const ms = Date.parse(String(t.createdAt));
    if (typeof t.transactionId !== 'string' || !Number.isFinite(ms)) continue;
    for (const eventId of creationEventIds(t.transactionId, ms))
      wanted.add(dispatchIdFor(eventId, endpoint));
  }
  for (const item of await readDispatchViews(db, [...wanted])) {
    const d = impliedFields(item);
    if (d.appId !== appId || d.referenceId !== referenceId) continue;
    byId.set(String(d.dispatchId), {
      ...d,
      ...principalIndexKeys(d as Parameters<typeof principalIndexKeys>[0]),
    });
  }
  return [...byId.values()].sort((a, b) => {
    const x = String(a.gsi2sk);
    const y = String(b.gsi2sk);
    return x < y ? -1 : x > y ? 1 : 0;
  });
}

/** The view attributes (what a listing shows) and keys of the dispatch items that exist. */
export async function readDispatchViews(
  db: LedgerDeps,
  ids: string[],
): Promise<Record<string, unknown>[]> {
  const attrs = ['pk', 'sk', ...DISPATCH_VIEW_ATTRS];
  const names = Object.fromEntries(attrs.map((a, i) => [`#a${i}`, a]));
  const items = await readDispatchItems(db, ids, {
    ProjectionExpression: Object.keys(names).join(', '),
    ExpressionAttributeNames: names,
  });
  return items.filter((i) => isDispatchHead(i));
}
