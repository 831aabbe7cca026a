import type { Runtime } from '../../runtime.js';
import { indexActive, indexChecked } from '../../storage/index-state.js';
import { referenceOfTransaction } from '../ids.js';

/**
 * Finding a transaction by its id alone. A transaction created since ids carry their principal's
 * referenceId (ids.ts, `transactionUuid`) is read where its id says, and is in no index. Any
 * other is found through the `entities` table's sparse `txn` index (keys only: the item's `pk`
 * names the principal). A transaction item carries `txnk` =
 * `APP#{appId}#TXN#{id}`. Transactions written before the index existed carry `gsi1pk` /
 * `gsi1sk` instead, in `gsi1`, which projects whole items: about 1.7 KB, two write units on
 * every write of the transaction where the keys-only entry costs one, and only when it is
 * created. A rewrite of such a transaction moves it to `txn`.
 *
 * On an existing table the index is added at a start (infra/definitions/apply.ts) and, on AWS,
 * backfilled before it can be queried. Until this process has seen it ACTIVE, it writes both
 * keys, so a transaction written meanwhile is found through `gsi1` whatever the index's state;
 * readers ask `txn` first and `gsi1` after.
 */

export const TXN_INDEX = 'txn';
export const TXN_KEY = 'txnk';

/** A transaction's key in `txn` (and, written before it, its `gsi1pk`). */
export const txnKey = (appId: string, id: string) => `APP#${appId}#TXN#${id}`;

/**
 * Whether this process has seen the `txn` index ACTIVE (shared/storage/index-state.ts): false at
 * first, while a check runs in the background.
 */
export function txnIndexActive(rt: Runtime): boolean {
  return indexActive(rt, rt.tables.entities, TXN_INDEX);
}

/** Settles once a check in flight has ended (tests). */
export function txnIndexChecked(rt: Runtime): Promise<boolean> {
  return indexChecked(rt, rt.tables.entities, TXN_INDEX);
}

/**
 * The index keys a transaction item carries (see the module comment): none when its id carries
 * the referenceId it is stored under (ids.ts, `transactionUuid`), since a lookup by id reads it
 * there directly.
 */
export function transactionIndexKeys(
  rt: Runtime,
  appId: string,
  id: string,
  referenceId: string,
): Record<string, string> {
  if (referenceOfTransaction(id) === referenceId) return {};
  const key = txnKey(appId, id);
  return txnIndexActive(rt) ? { [TXN_KEY]: key } : { [TXN_KEY]: key, gsi1pk: key, gsi1sk: 'TXN' };
}
