import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { AppError } from '../../errors.js';
import type { TransactItem } from '../../outbox/outbox.js';
import type { Runtime } from '../../runtime.js';
import { queryAll } from '../../storage/query.js';
import { unchangedDueCondition } from '../../timers/derived.js';
import { getReferenceKey } from '../apps.js';
import {
  derivedReferenceId,
  patterns,
  referenceOfTransaction,
  transactionOfRecord,
} from '../ids.js';
import type {
  Actor,
  HistoryEntry,
  RecordChange,
  StoredClaim,
  StoredPrincipal,
  StoredTransaction,
  UserPointer,
} from './model.js';
import { compactRecords, withFullRecords } from './model.js';
import { TXN_INDEX, TXN_KEY, transactionIndexKeys, txnKey } from './txn-index.js';

/**
 * Storage of principals, transactions, pointers and history in `entities` (layout agreed in
 * the consent design note; keep it exactly):
 * - principal   pk APP#{appId}#REF#{ref}   sk PRINCIPAL
 * - user        pk APP#{appId}#USER#{uid}  sk USER       → referenceId, current transactionId;
 *   only for users whose principal is not at the referenceId their user id derives to (ids.ts,
 *   `derivedReferenceId`): users created before that layout, a user whose derived referenceId
 *   was taken, a user linked to a widget capture in an app created before the claim layout. A
 *   principal at its user's derived referenceId holds `userId` and `userTransactionId` instead
 *   (`loadUser`); each kind of claim checks the other kind is absent in the same transaction, so
 *   a user id is claimed once.
 * - claim       pk APP#{appId}#REF#{derived ref} sk PRINCIPAL, `kind` claim → referenceId,
 *   transactionId: in an app of the claim layout (apps.ts, `claimsAtDerived`), a user linked to
 *   a widget capture is claimed here, at its derived referenceId, instead of by a pointer item.
 *   A pointer item is then written only when another principal holds that referenceId, and
 *   principals are never deleted (the erasure scrubs them), so in such an app a new user claimed
 *   at its derived referenceId needs no check that a pointer item is absent. A claim is no
 *   principal: `loadPrincipal` does not return it.
 * - transaction pk APP#{appId}#REF#{ref}   sk TXN#{id}; an id that carries its referenceId (ids.ts,
 *                 `transactionUuid`) is in no index; any other: txn APP#{appId}#TXN#{id} (`txnk`,
 *                 keys only; written before that index: gsi1 APP#{appId}#TXN#{id} / TXN; txn-index.ts)
 *                 and, while its first timer is pending, due {family}#{bucket}#{shard} /
 *                 {dueAt}#{kind}:{appId}:{id} (`duepk`/`duesk`/`duekind`, sparse; timers.ts)
 * - record      pk APP#{appId}#REC#{id}    sk REC        → transactionId, referenceId; only for
 *   records whose id is not derived from their transaction's (ids.ts, `recordUuid`): those of
 *   transactions created before that layout
 * The history of a transaction's changes is kept in the transaction item (`history`). Items
 * with sk HIST#{ISO time}#{ulid}, one per changed record, were written before that; they are
 * left as they are (the erasure sweep still scrubs them).
 * Every key starts with the app id, so no lookup can reach another app's items.
 */

export const keys = {
  principal: (appId: string, ref: string) => ({ pk: `APP#${appId}#REF#${ref}`, sk: 'PRINCIPAL' }),
  user: (appId: string, userId: string) => ({ pk: `APP#${appId}#USER#${userId}`, sk: 'USER' }),
  transaction: (appId: string, ref: string, id: string) => ({
    pk: `APP#${appId}#REF#${ref}`,
    sk: `TXN#${id}`,
  }),
  /** Where `gsi1` holds a transaction written before the `txn` index (txn-index.ts). */
  transactionIndex: (appId: string, id: string) => ({
    gsi1pk: txnKey(appId, id),
    gsi1sk: 'TXN',
  }),
  record: (appId: string, recordId: string) => ({ pk: `APP#${appId}#REC#${recordId}`, sk: 'REC' }),
};

const STORAGE_ATTRS = ['pk', 'sk', 'gsi1pk', 'gsi1sk', 'gsi2pk', 'gsi2sk', TXN_KEY, 'kind'];

function strip<T>(item: Record<string, unknown>): T {
  const out = { ...item };
  for (const k of STORAGE_ATTRS) delete out[k];
  return out as T;
}

async function getItem<T>(rt: Runtime, key: { pk: string; sk: string }): Promise<T | undefined> {
  const r = await rt.dynamo.doc.send(
    new GetCommand({ TableName: rt.tables.entities, Key: key, ConsistentRead: true }),
  );
  return r.Item ? strip<T>(r.Item) : undefined;
}

/** The item at a principal's key: a principal, or a user's claim (`isClaim`). */
export function loadPrincipalKey(rt: Runtime, appId: string, ref: string) {
  return getItem<StoredPrincipal & Partial<StoredClaim>>(rt, keys.principal(appId, ref));
}

/** Whether an item at a principal's key is a user's claim (`putClaim`), not a principal. */
export const isClaim = (item: object | undefined): boolean =>
  typeof (item as { claimOf?: unknown } | undefined)?.claimOf === 'string';

export async function loadPrincipal(
  rt: Runtime,
  appId: string,
  ref: string,
): Promise<StoredPrincipal | undefined> {
  const p = await loadPrincipalKey(rt, appId, ref);
  return p === undefined || isClaim(p) ? undefined : p;
}

/**
 * The user's record, by user id: first the principal at the referenceId the user id derives to
 * (ids.ts, `derivedReferenceId`), which stands for the pointer when it holds this user id and
 * the user's transaction; otherwise the user pointer item (a user created before the derived
 * layout, one whose derived referenceId was taken, or one linked to a widget capture).
 */
export async function loadUser(
  rt: Runtime,
  appId: string,
  userId: string,
): Promise<UserPointer | undefined> {
  return (await findUser(rt, appId, userId))?.user;
}

/**
 * `loadUser`, with the user's principal when the lookup read it on the way (the user is at its
 * derived referenceId), so a caller that needs both reads it once.
 */
export async function findUser(
  rt: Runtime,
  appId: string,
  userId: string,
): Promise<{ user: UserPointer; principal?: StoredPrincipal } | undefined> {
  const ref = derivedReferenceId(await getReferenceKey(rt, appId), userId);
  const p = await loadPrincipalKey(rt, appId, ref);
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
  const user = await getItem<UserPointer>(rt, keys.user(appId, userId));
  return user ? { user } : undefined;
}

/** The referenceId a user id is first offered in the app (ids.ts, `derivedReferenceId`). */
export async function derivedReferenceOf(rt: Runtime, appId: string, userId: string) {
  return derivedReferenceId(await getReferenceKey(rt, appId), userId);
}

export async function loadTransactionAt(rt: Runtime, appId: string, ref: string, id: string) {
  const t = await getItem<StoredTransaction>(rt, keys.transaction(appId, ref, id));
  return t && withFullRecords(t);
}

/**
 * By id alone: first where the id says (ids.ts, `referenceOfTransaction`), the one read a
 * transaction created since ids carry their referenceId needs; otherwise an index names the
 * principal (`txn`, then `gsi1` for a transaction written before it: txn-index.ts), then a
 * consistent read of the item itself (an index may lag a write by a moment; the item never does).
 */
export async function loadTransaction(
  rt: Runtime,
  appId: string,
  id: string,
): Promise<StoredTransaction | undefined> {
  if (!patterns.uuid.test(id)) return undefined;
  const carried = referenceOfTransaction(id);
  if (carried !== undefined) {
    const t = await loadTransactionAt(rt, appId, carried, id);
    if (t) return t;
  }
  const ref = (await refByTxnIndex(rt, appId, id)) ?? (await refByGsi1(rt, appId, id));
  return ref === undefined ? undefined : loadTransactionAt(rt, appId, ref, id);
}

async function refByTxnIndex(rt: Runtime, appId: string, id: string) {
  const r = await rt.dynamo.doc
    .send(
      new QueryCommand({
        TableName: rt.tables.entities,
        IndexName: TXN_INDEX,
        KeyConditionExpression: '#k = :k',
        ExpressionAttributeNames: { '#k': TXN_KEY },
        ExpressionAttributeValues: { ':k': txnKey(appId, id) },
      }),
    )
    .catch((err: unknown) => {
      // The index is not there yet (being added to an existing table): gsi1 answers.
      if ((err as { name?: string }).name === 'ValidationException') return undefined;
      throw err;
    });
  const pk: unknown = r?.Items?.[0]?.pk;
  const prefix = keys.principal(appId, '').pk;
  return typeof pk === 'string' && pk.startsWith(prefix) ? pk.slice(prefix.length) : undefined;
}

async function refByGsi1(rt: Runtime, appId: string, id: string) {
  const idx = keys.transactionIndex(appId, id);
  const r = await rt.dynamo.doc.send(
    new QueryCommand({
      TableName: rt.tables.entities,
      IndexName: 'gsi1',
      KeyConditionExpression: 'gsi1pk = :pk AND gsi1sk = :sk',
      ExpressionAttributeValues: { ':pk': idx.gsi1pk, ':sk': idx.gsi1sk },
      ProjectionExpression: 'referenceId',
    }),
  );
  return r.Items?.[0]?.referenceId as string | undefined;
}

/**
 * Where a record is: its transaction and principal. A record id derived from its transaction's
 * (ids.ts, `recordUuid`) names the transaction, found by id and checked to hold the record;
 * any other record id (from before that layout) is found through its pointer item.
 */
export async function loadRecordPointer(
  rt: Runtime,
  appId: string,
  recordId: string,
): Promise<{ transactionId: string; referenceId: string } | undefined> {
  if (!patterns.uuid.test(recordId)) return undefined;
  const derived = transactionOfRecord(recordId);
  if (derived !== undefined) {
    const t = await loadTransaction(rt, appId, derived);
    if (t?.records.some((r) => r.recordId === recordId))
      return { transactionId: t.transactionId, referenceId: t.referenceId };
  }
  return getItem(rt, keys.record(appId, recordId));
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
  rt: Runtime,
  appId: string,
  ref: string,
  limit: number,
  cursor?: string,
): Promise<{ items: StoredTransaction[]; nextCursor: string | null }> {
  const { pk } = keys.principal(appId, ref);
  const start = cursor === undefined ? undefined : decodeCursor(cursor, pk);
  // One extra item tells whether a next page exists, so the last page has no cursor.
  const r = await rt.dynamo.doc.send(
    new QueryCommand({
      TableName: rt.tables.entities,
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
export async function allTransactionIds(rt: Runtime, appId: string, ref: string) {
  const items = await queryAll(rt.dynamo.doc, {
    TableName: rt.tables.entities,
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :txn)',
    ExpressionAttributeValues: { ':pk': keys.principal(appId, ref).pk, ':txn': 'TXN#' },
    ProjectionExpression: 'transactionId',
    ConsistentRead: true,
  });
  return items.map((i) => i.transactionId as string);
}

// ---- write items (to be combined into one rt.outbox.commit) ----

export function putPrincipal(rt: Runtime, p: StoredPrincipal): TransactItem {
  return {
    Put: {
      TableName: rt.tables.entities,
      Item: { ...p, ...keys.principal(p.appId, p.referenceId), kind: 'principal' },
      ConditionExpression: 'attribute_not_exists(pk)',
    },
  };
}

/** Part of a write claiming a user at its derived referenceId: the user has no pointer item. */
export function noUserPointer(rt: Runtime, appId: string, userId: string): TransactItem {
  return {
    ConditionCheck: {
      TableName: rt.tables.entities,
      Key: keys.user(appId, userId),
      ConditionExpression: 'attribute_not_exists(pk)',
    },
  };
}

/**
 * Part of a write claiming a user through a pointer item: the principal at the user's derived
 * referenceId is not the user's (no user claims it through that principal meanwhile).
 */
export function notDerivedUser(
  rt: Runtime,
  appId: string,
  derivedRef: string,
  userId: string,
): TransactItem {
  return {
    ConditionCheck: {
      TableName: rt.tables.entities,
      Key: keys.principal(appId, derivedRef),
      ConditionExpression:
        'attribute_not_exists(pk) OR attribute_not_exists(userId) OR userId <> :u',
      ExpressionAttributeValues: { ':u': userId },
    },
  };
}

/**
 * A user's claim at its derived referenceId (the claim layout, see the layout above): what a
 * pointer item holds, at the key no other claim of the user can take. `claimOf` is the
 * referenceId of the user's principal.
 */
export function putClaim(rt: Runtime, derivedRef: string, u: UserPointer): TransactItem {
  const claim: StoredClaim = {
    appId: u.appId,
    userId: u.userId,
    claimOf: u.referenceId,
    transactionId: u.transactionId,
    createdAt: u.createdAt,
  };
  return {
    Put: {
      TableName: rt.tables.entities,
      Item: { ...claim, ...keys.principal(u.appId, derivedRef), kind: 'claim' },
      ConditionExpression: 'attribute_not_exists(pk)',
    },
  };
}

export function putUser(rt: Runtime, u: UserPointer): TransactItem {
  return {
    Put: {
      TableName: rt.tables.entities,
      Item: { ...u, ...keys.user(u.appId, u.userId), kind: 'user' },
      ConditionExpression: 'attribute_not_exists(pk)',
    },
  };
}

/**
 * Writes the whole transaction item. `expectedVersion` undefined: it must not exist yet;
 * otherwise the stored version must still be that one (optimistic locking), and so must its
 * derived timer and that timer's lease, which `t` carries as loaded: a timer fired (removed) or
 * leased since the load makes the write fail and be retried on a fresh read, so a rewrite never
 * brings a fired timer back nor drops a sweeper's lease.
 */
export function putTransaction(
  rt: Runtime,
  t: StoredTransaction,
  expectedVersion?: number,
): TransactItem {
  const due = unchangedDueCondition(t);
  return {
    Put: {
      TableName: rt.tables.entities,
      Item: {
        ...t,
        // Off during a rolling upgrade: a process of an earlier version reads every record whole.
        ...(rt.config.CONSENT_COMPACT_CREATION ? { records: compactRecords(t) } : {}),
        ...keys.transaction(t.appId, t.referenceId, t.transactionId),
        ...transactionIndexKeys(rt, t.appId, t.transactionId, t.referenceId),
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

export function putRecordPointer(
  rt: Runtime,
  t: StoredTransaction,
  recordId: string,
): TransactItem {
  return {
    Put: {
      TableName: rt.tables.entities,
      Item: {
        ...keys.record(t.appId, recordId),
        kind: 'record',
        appId: t.appId,
        recordId,
        transactionId: t.transactionId,
        referenceId: t.referenceId,
      },
      ConditionExpression: 'attribute_not_exists(pk)',
    },
  };
}

/**
 * The transaction with one history entry per changed record appended: who, what, when (see
 * `HistoryEntry`). Entries already there are kept as they are.
 */
export function withHistory(
  t: StoredTransaction,
  changes: readonly RecordChange[],
  actor: Actor,
  at: string,
): StoredTransaction {
  if (changes.length === 0) return t;
  const entries: HistoryEntry[] = changes.map((c) => ({
    recordId: c.recordId,
    from: c.from,
    to: c.to,
    operation: c.operation,
    at,
    who: actor,
  }));
  return { ...t, history: [...(t.history ?? []), ...entries] };
}
