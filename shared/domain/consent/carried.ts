import { derivedEventId } from '../ids.js';
import type { Environment } from '../types.js';
import { planEvents, sequencesAfter, type ConsentEvent } from './events.js';
import type { Actor, HistoryEntry, RecordChange, StoredTransaction } from './model.js';

/**
 * What a transaction item says without storing it: its creation history and its creation
 * events. A new transaction's item holds neither, since DynamoDB bills a write by the started
 * kilobyte: its records as created, `createdAt`, `createdBy` and `environment` determine both.
 * The first change of the transaction writes both out (writer.ts, `mutateTransaction`, and the
 * store, shared/storage/consents/carried.ts), before its records move on.
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
 * publishes when it creates it (the same ids, fields, sequences from 1, and order).
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
    nextSequence: sequencesAfter(0),
  });
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
