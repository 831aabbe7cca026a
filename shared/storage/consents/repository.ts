import { GetCommand, QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { TableNames } from '../../../infra/definitions/tables.js';
import { AppError } from '../../errors.js';
import type { TransactItem } from '../group-commit.js';
import { queryAll } from '../query.js';
import { unchangedDueCondition } from '../timers/derived.js';
import { getReferenceKey } from '../../domain/apps.js';
import {
  derivedReferenceId,
  referenceOfTransaction,
  transactionOfRecord,
} from '../../domain/ids.js';
import type {
  StoredClaim,
  StoredPrincipal,
  StoredTransaction,
  UserPointer,
} from '../../domain/consent/model.js';
import { compactRecords, withFullRecords } from '../../domain/consent/model.js';

/**
 * Storage of principals, transactions and users' claims in `entities`. Every key starts with
 * the app id, so no lookup can reach another app's items.
 * - principal   pk APP#{appId}#REF#{ref}   sk PRINCIPAL
 * - transaction pk APP#{appId}#REF#{ref}   sk TXN#{id}; its id carries its principal's
 *   referenceId (ids.ts, `transactionUuid`) and each record's id is derived from it
 *   (`recordUuid`), so both are read by id with no index and no pointer item. Its history is
 *   its `history` attribute (implied while it is as created: carried.ts), and while its first
 *   timer is pending it is in the sparse `due` index (`duepk`/`duesk`/`duekind`; timers.ts).
 * - A user (record API) is claimed once, at the referenceId its user id derives to (ids.ts,
 *   `derivedReferenceId`), by one of:
 *   - the user's own principal there, holding `userId` and `userTransactionId`;
 *   - a claim   pk APP#{appId}#REF#{derived ref} sk PRINCIPAL, `kind` claim → `claimOf` (the
 *     referenceId of the user's principal), transactionId: a user linked to a widget capture;
 *     no principal, so `loadPrincipal` does not return it;
 *   - a user pointer pk APP#{appId}#USER#{uid} sk USER → referenceId, transactionId, only when
 *     another principal holds that referenceId; its write checks that principal is not the
 *     user's (`notDerivedUser`). Principals are never deleted (the erasure scrubs them), so a
 *     pointer item never stands beside a free derived referenceId.
 */

export const keys = {
  principal: (appId: string, ref: string) => ({ pk: `APP#${appId}#REF#${ref}`, sk: 'PRINCIPAL' }),
  user: (appId: string, userId: string) => ({ pk: `APP#${appId}#USER#${userId}`, sk: 'USER' }),
  transaction: (appId: string, ref: string, id: string) => ({
    pk: `APP#${appId}#REF#${ref}`,
    sk: `TXN#${id}`,
  }),
};

/** What the functions below use: the document client and the `entities` table. */
export interface RepositoryDeps {
  dynamo: { doc: DynamoDBDocumentClient };
  tables: Pick<TableNames, 'entities'>;
}

/** The app's reference key is read through the app store (shared/domain/apps.ts). */
type KeyHost = RepositoryDeps & Parameters<typeof getReferenceKey>[0];

const STORAGE_ATTRS = ['pk', 'sk', 'kind'];

function strip<T>(item: Record<string, unknown>): T {
  const out = { ...item };
  for (const k of STORAGE_ATTRS) delete out[k];
  return out as T;
}

async function getItem<T>(
  d: RepositoryDeps,
  key: { pk: string; sk: string },
): Promise<T | undefined> {
  const r = await d.dynamo.doc.send(
    new GetCommand({ TableName: d.tables.entities, Key: key, ConsistentRead: true }),
  );
  return r.Item ? strip<T>(r.Item) : undefined;
}

/** The item at a principal's key: a principal, or a user's claim (`isClaim`). */
export function loadPrincipalKey(d: RepositoryDeps, appId: string, ref: string) {
  return getItem<StoredPrincipal & Partial<StoredClaim>>(d, keys.principal(appId, ref));
}

/** Whether an item at a principal's key is a user's claim (`putClaim`), not a principal. */
export const isClaim = (item: object | undefined): boolean =>
  typeof (item as { claimOf?: unknown } | undefined)?.claimOf === 'string';

export async function loadPrincipal(
  d: RepositoryDeps,
  appId: string,
  ref: string,
): Promise<StoredPrincipal | undefined> {
  const p = await loadPrincipalKey(d, appId, ref);
  return p === undefined || isClaim(p) ? undefined : p;
}

/**
 * The user's record, by user id: the item at the referenceId the user id derives to (ids.ts,
 * `derivedReferenceId`) when it claims this user (its principal, or a claim); otherwise the user
 * pointer item (another principal holds that referenceId).
 */
export async function loadUser(
  d: KeyHost,
  appId: string,
  userId: string,
): Promise<UserPointer | undefined> {
  return (await findUser(d, appId, userId))?.user;
}

/**
 * `loadUser`, with the user's principal when the lookup read it on the way (the user is at its
 * derived referenceId), so a caller that needs both reads it once.
 */
export async function findUser(
  d: KeyHost,
  appId: string,
  userId: string,
): Promise<{ user: UserPointer; principal?: StoredPrincipal } | undefined> {
  return findUserAt(d, appId, userId, await derivedReferenceOf(d, appId, userId));
}

/** `findUser`, given the referenceId the user id derives to. */
export async function findUserAt(
  d: RepositoryDeps,
  appId: string,
  userId: string,
  ref: string,
): Promise<{ user: UserPointer; principal?: StoredPrincipal } | undefined> {
  const p = await loadPrincipalKey(d, appId, ref);
  if (isClaim(p) && p?.userId === userId)
    return {
      user: {
        appId,
        userId,
        referenceId: p.claimOf!,
        transactionId: p.transactionId!,
        createdAt: p.createdAt,
      },
    };
  if (!isClaim(p) && p?.userId === userId && p.userTransactionId !== undefined)
    return {
      user: {
        appId,
        userId,
        referenceId: ref,
        transactionId: p.userTransactionId,
        createdAt: p.createdAt,
      },
      principal: p,
    };
  const user = await getItem<UserPointer>(d, keys.user(appId, userId));
  return user ? { user } : undefined;
}

/** The referenceId a user id is first offered in the app (ids.ts, `derivedReferenceId`). */
export async function derivedReferenceOf(d: KeyHost, appId: string, userId: string) {
  return derivedReferenceId(await getReferenceKey(d, appId), userId);
}

export async function loadTransactionAt(d: RepositoryDeps, appId: string, ref: string, id: string) {
  const t = await getItem<StoredTransaction>(d, keys.transaction(appId, ref, id));
  return t && withFullRecords(t);
}

/** By id alone: the id names its principal (ids.ts, `referenceOfTransaction`). */
export async function loadTransaction(
  d: RepositoryDeps,
  appId: string,
  id: string,
): Promise<StoredTransaction | undefined> {
  const ref = referenceOfTransaction(id);
  return ref === undefined ? undefined : loadTransactionAt(d, appId, ref, id);
}

/**
 * Where a record is: its transaction and principal, both named by its id (ids.ts,
 * `transactionOfRecord`), and checked to hold the record.
 */
export async function loadRecordPointer(
  d: RepositoryDeps,
  appId: string,
  recordId: string,
): Promise<{ transactionId: string; referenceId: string } | undefined> {
  const transactionId = transactionOfRecord(recordId);
  if (transactionId === undefined) return undefined;
  const t = await loadTransaction(d, appId, transactionId);
  return t?.records.some((r) => r.recordId === recordId)
    ? { transactionId: t.transactionId, referenceId: t.referenceId }
    : undefined;
}

/** Opaque page cursor: base64url of the DynamoDB key where the next page starts. */
export function encodeCursor(key: Record<string, unknown>): string {
  return Buffer.from(JSON.stringify({ pk: key.pk, sk: key.sk })).toString('base64url');
}

/**
 * Decodes a cursor and checks it points into this principal's transactions: a cursor made
 * for another app or principal is refused, never followed.
 */
export function decodeCursor(cursor: string, pk: string): { pk: string; sk: string } {
  let key: unknown;
  try {
    key = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    key = undefined;
  }
  const k = key as { pk?: unknown; sk?: unknown } | undefined;
  if (k?.pk !== pk || typeof k.sk !== 'string' || !k.sk.startsWith('TXN#'))
    throw new AppError('SVC_VALIDATION_FAILED', 'The query is not valid', {
      errors: [{ path: '/cursor', message: 'is not a cursor of this listing' }],
    });
  return { pk: k.pk, sk: k.sk };
}

/** One page of a principal's transactions, newest first. */
export async function queryTransactions(
  d: RepositoryDeps,
  appId: string,
  ref: string,
  limit: number,
  cursor?: string,
): Promise<{ items: StoredTransaction[]; nextCursor: string | null }> {
  const { pk } = keys.principal(appId, ref);
  const start = cursor === undefined ? undefined : decodeCursor(cursor, pk);
  // One extra item tells whether a next page exists, so the last page has no cursor.
  const r = await d.dynamo.doc.send(
    new QueryCommand({
      TableName: d.tables.entities,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :txn)',
      ExpressionAttributeValues: { ':pk': pk, ':txn': 'TXN#' },
      ScanIndexForward: false,
      Limit: limit + 1,
      ConsistentRead: true,
      ...(start ? { ExclusiveStartKey: start } : {}),
    }),
  );
  const raw = r.Items ?? [];
  const more = raw.length > limit;
  const page = raw.slice(0, limit);
  const last = page[page.length - 1];
  // Without the extra item, a LastEvaluatedKey means DynamoDB stopped at its 1 MB page size.
  const nextCursor =
    more && last
      ? encodeCursor(last)
      : r.LastEvaluatedKey
        ? encodeCursor(r.LastEvaluatedKey)
        : null;
  return { items: page.map((i) => withFullRecords(strip<StoredTransaction>(i))), nextCursor };
}

/** Every transaction id of a principal (bulk calls naming no ids). */
export async function allTransactionIds(d: RepositoryDeps, appId: string, ref: string) {
  const items = await queryAll(d.dynamo.doc, {
    TableName: d.tables.entities,
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :txn)',
    ExpressionAttributeValues: { ':pk': keys.principal(appId, ref).pk, ':txn': 'TXN#' },
    ProjectionExpression: 'transactionId',
    ConsistentRead: true,
  });
  return items.map((i) => i.transactionId as string);
}

// ---- write items (combined into one outbox commit by the store, store.ts) ----

export function putPrincipal(d: RepositoryDeps, p: StoredPrincipal): TransactItem {
  return {
    Put: {
      TableName: d.tables.entities,
      Item: { ...p, ...keys.principal(p.appId, p.referenceId), kind: 'principal' },
      ConditionExpression: 'attribute_not_exists(pk)',
    },
  };
}

/**
 * Part of a write claiming a user through a pointer item: the principal at the user's derived
 * referenceId is not the user's (no user claims it through that principal meanwhile).
 */
export function notDerivedUser(
  d: RepositoryDeps,
  appId: string,
  derivedRef: string,
  userId: string,
): TransactItem {
  return {
    ConditionCheck: {
      TableName: d.tables.entities,
      Key: keys.principal(appId, derivedRef),
      ConditionExpression:
        'attribute_not_exists(pk) OR attribute_not_exists(userId) OR userId <> :u',
      ExpressionAttributeValues: { ':u': userId },
    },
  };
}

/**
 * A user's claim at its derived referenceId (see the layout above): what a pointer item holds,
 * at the key no other claim of the user can take. `claimOf` is the referenceId of the user's
 * principal.
 */
export function putClaim(d: RepositoryDeps, derivedRef: string, u: UserPointer): TransactItem {
  const claim: StoredClaim = {
    appId: u.appId,
    userId: u.userId,
    claimOf: u.referenceId,
    transactionId: u.transactionId,
    createdAt: u.createdAt,
  };
  return {
    Put: {
      TableName: d.tables.entities,
      Item: { ...claim, ...keys.principal(u.appId, derivedRef), kind: 'claim' },
      ConditionExpression: 'attribute_not_exists(pk)',
    },
  };
}

export function putUser(d: RepositoryDeps, u: UserPointer): TransactItem {
  return {
    Put: {
      TableName: d.tables.entities,
      Item: { ...u, ...keys.user(u.appId, u.userId), kind: 'user' },
      ConditionExpression: 'attribute_not_exists(pk)',
    },
  };
}

/**
 * Writes the whole transaction item, its records compact (model.ts, `compactRecords`).
 * `expectedVersion` undefined: it must not exist yet;
 * otherwise the stored version must still be that one (optimistic locking), and so must its
 * derived timer and that timer's lease, which `t` carries as loaded: a timer fired (removed) or
 * leased since the load makes the write fail and be retried on a fresh read, so a rewrite never
 * brings a fired timer back nor drops a sweeper's lease.
 */
export function putTransaction(
  d: RepositoryDeps,
  t: StoredTransaction,
  expectedVersion?: number,
): TransactItem {
  const due = unchangedDueCondition(t);
  return {
    Put: {
      TableName: d.tables.entities,
      Item: {
        ...t,
        records: compactRecords(t),
        ...keys.transaction(t.appId, t.referenceId, t.transactionId),
        kind: 'transaction',
      },
      ...(expectedVersion === undefined
        ? { ConditionExpression: 'attribute_not_exists(pk)' }
        : {
            ConditionExpression: `#v = :v AND ${due.expression}`,
            ExpressionAttributeNames: { '#v': 'version' },
            ExpressionAttributeValues: { ':v': expectedVersion, ...due.values },
          }),
    },
  };
}
