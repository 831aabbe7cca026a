import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import type { TransactItem } from '../outbox/outbox.js';
import type { Runtime } from '../runtime.js';
import { isConditionFailure } from '../storage/dynamo.js';
import type { DeliveryStatus } from '../webhooks/schedule.js';
import {
  attemptSk,
  dispatchPk,
  getDispatchState,
  type AttemptEntry,
  type DispatchState,
} from './dispatches.js';
import { dueDeleteItem, duePutItem, type DueEntry } from './due.js';
import { chainHash } from './hash.js';

/** Appending attempt entries to a dispatch's chain (see dispatches.ts for the layout). */

export interface RecordAttempt {
  state: Pick<DispatchState, 'dispatchId' | 'attempts' | 'headHash' | 'duePk' | 'dueSk'>;
  entry: Omit<AttemptEntry, 'type' | 'dispatchId' | 'attempt' | 'prevHash' | 'hash'>;
  deliveryStatus: DeliveryStatus;
  /** The next automatic attempt, when one is scheduled. */
  next?: DueEntry;
}

export type RecordResult =
  /** Written, and the due entry replaced. */
  | 'recorded'
  /** Written, but an operator re-queued the dispatch meanwhile: that entry was kept. */
  | 'recorded_requeued'
  /** Another worker already recorded this attempt number (an at-least-once duplicate). */
  | 'duplicate';

/**
 * Appends attempt `attempts + 1` and moves the dispatch on, in one transaction that also
 * swaps its due entry, conditional on the dispatch still being where this attempt found it.
 */
export async function recordAttempt(
  rt: Runtime,
  r: RecordAttempt,
): Promise<{ result: RecordResult; entry: AttemptEntry }> {
  const n = r.state.attempts + 1;
  const body = {
    type: 'attempt' as const,
    dispatchId: r.state.dispatchId,
    attempt: n,
    ...r.entry,
    prevHash: r.state.headHash,
  };
  const entry: AttemptEntry = { ...body, hash: chainHash(r.state.headHash, body) };
  const key = { pk: dispatchPk(r.state.dispatchId), sk: 'DSP' };
  const put: TransactItem = {
    Put: {
      TableName: rt.tables.ledger,
      Item: { ...entry, pk: key.pk, sk: attemptSk(n) },
      ConditionExpression: 'attribute_not_exists(pk)',
    },
  };
  const values: Record<string, unknown> = {
    ':n': n,
    ':prev': r.state.attempts,
    ':head': entry.hash,
    ':status': r.deliveryStatus,
    ':at': entry.time,
  };
  const sets = [
    'attempts = :n',
    'headHash = :head',
    'deliveryStatus = :status',
    'lastAttemptAt = :at',
  ];
  if (entry.outcome === 'delivered') sets.push('deliveredAt = if_not_exists(deliveredAt, :at)');
  const update = (withDue: boolean): TransactItem => {
    const s = [...sets];
    const v = { ...values };
    let cond = 'attempts = :prev';
    let remove = '';
    if (withDue) {
      cond += r.state.dueSk ? ' AND dueSk = :oldSk' : ' AND attribute_not_exists(dueSk)';
      if (r.state.dueSk) v[':oldSk'] = r.state.dueSk;
      if (r.next) {
        s.push('duePk = :dpk', 'dueSk = :dsk', 'nextAttemptAt = :next');
        Object.assign(v, { ':dpk': r.next.pk, ':dsk': r.next.sk, ':next': r.next.dueAt });
      } else {
        s.push('nextAttemptAt = :null');
        v[':null'] = null;
        remove = ' REMOVE duePk, dueSk';
      }
    }
    return {
      Update: {
        TableName: rt.tables.ledger,
        Key: key,
        UpdateExpression: `SET ${s.join(', ')}${remove}`,
        ConditionExpression: cond,
        ExpressionAttributeValues: v,
      },
    };
  };
  const swap: TransactItem[] = [];
  if (r.state.duePk && r.state.dueSk)
    swap.push(dueDeleteItem(rt, { pk: r.state.duePk, sk: r.state.dueSk }));
  if (r.next) swap.push(duePutItem(rt, r.next));
  try {
    await rt.dynamo.doc.send(
      new TransactWriteCommand({ TransactItems: [put, update(true), ...swap] }),
    );
    return { result: 'recorded', entry };
  } catch (err) {
    if (!isConditionFailure(err)) throw err;
  }
  // Either this attempt number is taken (a duplicate) or only the due entry moved (re-queued).
  const now = await getDispatchState(rt, r.state.dispatchId);
  if (!now || now.attempts !== r.state.attempts) return { result: 'duplicate', entry };
  try {
    await rt.dynamo.doc.send(new TransactWriteCommand({ TransactItems: [put, update(false)] }));
    return { result: 'recorded_requeued', entry };
  } catch (err) {
    if (isConditionFailure(err)) return { result: 'duplicate', entry };
    throw err;
  }
}
