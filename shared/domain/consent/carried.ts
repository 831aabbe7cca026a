import type { OutMessage } from '../../bus/producer.js';
import { ATTR } from '../../storage/outbox/commits.js';
import { derivedEventId } from '../ids.js';
import type { Environment } from '../types.js';
import { planEvents, toOutboxItem, type ConsentEvent } from './events.js';
import {
  withFullRecords,
  type HistoryEntry,
  type RecordChange,
  type StoredTransaction,
} from './model.js';

/**
 * What a transaction item says without storing it: its creation history and its creation
 * events. A new transaction's item holds neither, since DynamoDB bills a write by the started
 * kilobyte: its records as created, `createdAt`, `createdBy` and `environment` determine both.
 * The first change of the transaction writes both out (writer.ts, `mutateTransaction`), before
 * its records move on.
 */

/** A new transaction's records, as changes: each created in its first state. */
export function creations(txn: Pick<StoredTransaction, 'records'>): RecordChange[] {
  return txn.records.map((r) => ({
    recordId: r.recordId,
    purpose: r.purpose,
    from: null,
    to: r.state,
    operation: 'create',
  }));
}

/**
 * The transaction's history: as stored, or, for a transaction not changed since its creation
 * (no `history`), one `create` entry a record, at `createdAt`, by `createdBy`.
 */
export function historyOf(t: StoredTransaction): HistoryEntry[] {
  if (t.history) return t.history;
  const who = t.createdBy;
  if (!who) throw new Error(`transaction ${t.transactionId} has neither history nor createdBy`);
  return creations(t).map(({ purpose: _p, ...c }) => ({ ...c, at: t.createdAt, who }));
}

/** Event ids of a transaction's creation: derived from its id, in the order they are planned. */
export function creationIds(t: Pick<StoredTransaction, 'transactionId' | 'createdAt'>) {
  let n = 0;
  const ms = Date.parse(t.createdAt);
  return () => derivedEventId(t.transactionId, n++, ms);
}

/**
 * The events a transaction's creation emits, from the transaction as created: what the writer
 * publishes when it creates it (the same ids, fields and order).
 */
export function creationEvents(
  t: StoredTransaction,
  environment: Environment,
  baseUrl: string,
): ConsentEvent[] {
  return planEvents({
    // Creation events need no postback, so the app's SLA time scale plays no part.
    app: { appId: t.appId, environment, slaTimeScale: 1 },
    txn: t,
    changes: creations(t),
    created: true,
    now: new Date(t.createdAt),
    baseUrl,
    newId: creationIds(t),
  });
}

/**
 * The messages of a transaction item written as a derived carrier (outbox.ts, `commit`), for the
 * relay: undefined unless the item is still the transaction as created (version 1, its
 * environment kept). A later version holds its creation's messages packed.
 */
export function deriveCreationMessages(
  item: Record<string, unknown>,
  o: { topic: string; baseUrl: string },
): OutMessage[] | undefined {
  const t = item as unknown as StoredTransaction;
  if (t.version !== 1 || (t.environment !== 'sandbox' && t.environment !== 'live'))
    return undefined;
  if (!Array.isArray(t.records) || typeof t.createdAt !== 'string') return undefined;
  return creationEvents(withFullRecords(t), t.environment, o.baseUrl.replace(/\/+$/, '')).map(
    (e) => {
      const m = toOutboxItem(e, o.topic);
      return { topic: m.topic, key: m.key, value: m.value, headers: {} };
    },
  );
}

/** Whether a stored transaction carries its creation events only as derivable (not packed). */
export function carriesDerived(t: object): boolean {
  const item = t as Record<string, unknown>;
  return item[ATTR.at] !== undefined && item[ATTR.packed] === undefined && item.version === 1;
}
