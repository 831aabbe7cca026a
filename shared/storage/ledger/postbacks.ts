import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import type { ComplianceFlag } from '../../domain/compliance/flags.js';
import type { PostbackMessage } from '../../domain/compliance/postback.js';
import type { EventType } from '../../domain/consent/events.js';
import type { TransactItem } from '../outbox/outbox.js';
import type { LedgerDeps } from './deps.js';
import { cancellationReasons } from '../dynamo.js';
import { changeKeys } from './changes.js';
import { appIndexUpdate, dispatchPk, dispatchKey } from './dispatches.js';
import type { TimerEntry } from '../timers/due.js';
import {
  chainAfter,
  flagSk,
  gaugeCounterItem,
  type FlagChange,
  type FlagEntry,
  type GaugeDeltas,
} from './flag-entries.js';
import { RETAIN_ATTR, retainUntilFor } from '../../domain/ledger/retention.js';
import { factOf, worstOf, type PostbackFact } from './summary.js';

/**
 * Postback entries of the dispatch ledger (sk `PB#{receivedAt}#{postbackId}`: the whole
 * postback as accepted, with the service's receipt time) and the compliance worker's one
 * write, which appends postback and flag entries to the dispatch's chain.
 */

export const postbackSk = (receivedAt: string, postbackId: string) =>
  `PB#${receivedAt}#${postbackId}`;

export interface PostbackEntry extends Omit<PostbackMessage, 'appId'> {
  type: 'postback';
  prevHash: string;
  hash: string;
}

/** The API shape of a postback entry: storage keys and the entry type removed. */
export function toPostback(item: Record<string, unknown>): Omit<PostbackEntry, 'type'> {
  const { pk: _pk, sk: _sk, type: _type, [RETAIN_ATTR]: _ttl, ...entry } = item;
  return entry as unknown as Omit<PostbackEntry, 'type'>;
}

/** The dispatch as the compliance worker read it: its write holds only if this still holds. */
export interface ComplianceBase {
  dispatchId: string;
  /** With dispatchId, where the change index files the dispatch (see changes.ts). */
  appId: string;
  createdAt: string;
  event: EventType;
  headHash: string;
  complianceFlag: ComplianceFlag | null;
  /** Gauge memberships as stored; undefined before the first evaluation. */
  awaitingPostback: boolean | undefined;
  nearDeadline: boolean | undefined;
  /** Flag entries so far (the next one is numbered flagCount + 1). */
  flagCount: number;
  /** The postbacks recorded so far and the worst flag so far (summary.ts). */
  postbacks: readonly PostbackFact[];
  worstFlag: ComplianceFlag | null;
  /** False while the dispatch item does not hold that summary: this write stores it. */
  summaryStored: boolean;
}

export interface ComplianceWrite {
  base: ComplianceBase;
  /** A postback to record, with the consumer's idempotency claim that commits with it. */
  postback?: { message: PostbackMessage; claim: TransactItem };
  changes: FlagChange[];
  gauges: { awaitingPostback: boolean; nearDeadline: boolean };
  /** The next SLA check (an idempotent put: its key is the dispatch and the instant). */
  next?: TimerEntry;
  /**
   * The TTL of the entries and of the dispatch item (retention.ts), from the app's retention;
   * the default retention from now when absent.
   */
  retainUntil?: number;
}

export type ComplianceResult =
  | { result: 'written'; postback?: PostbackEntry; flags: FlagEntry[] }
  /** This postback was recorded before (a redelivery): nothing written. */
  | { result: 'duplicate' }
  /** The dispatch changed since it was read: read again, plan again. */
  | { result: 'moved' };

const one = (b: boolean) => (b ? 1 : 0);

/** How the gauge counters move when the dispatch goes from `base` to the written state. */
export function gaugeDeltas(w: ComplianceWrite): GaugeDeltas {
  const last = w.changes.at(-1)?.flag ?? w.base.complianceFlag;
  return {
    awaiting: one(w.gauges.awaitingPostback) - one(w.base.awaitingPostback === true),
    near: one(w.gauges.nearDeadline) - one(w.base.nearDeadline === true),
    unconfirmed:
      one(last === 'unconfirmed_erasure') - one(w.base.complianceFlag === 'unconfirmed_erasure'),
  };
}

/**
 * Which items of a cancelled transaction failed their condition; undefined when it was not
 * cancelled. A cancellation for contention (TransactionConflict) fails none of them.
 */
function failedConditions(err: unknown): Set<number> | undefined {
  return cancellationReasons(err)?.failed;
}

/**
 * One transaction: the idempotency claim, the postback entry, the flag entries, the dispatch
 * update (head, flag, gauge memberships) conditional on the dispatch being as read, the gauge
 * counters and the next SLA check. Either all of it happens or none.
 */
export async function writeCompliance(
  db: LedgerDeps,
  w: ComplianceWrite,
): Promise<ComplianceResult> {
  const b = w.base;
  const pk = dispatchPk(b.dispatchId);
  const { postback: pb } = w;
  type Body = Omit<PostbackEntry, 'prevHash' | 'hash'> | Omit<FlagEntry, 'prevHash' | 'hash'>;
  const bodies: Body[] = [];
  if (pb) {
    // The message's own `type` ('postback') is the entry's type.
    const { appId: _appId, ...message } = pb.message;
    bodies.push(message);
  }
  w.changes.forEach((c, i) =>
    bodies.push({ type: 'flag', dispatchId: b.dispatchId, seq: b.flagCount + i + 1, ...c }),
  );
  const chained = chainAfter<PostbackEntry | FlagEntry>(b.headHash, bodies);
  const entries = chained.entries;
  const deltas = gaugeDeltas(w);
  const gaugesMoved =
    w.gauges.awaitingPostback !== b.awaitingPostback || w.gauges.nearDeadline !== b.nearDeadline;

  const ttl = w.retainUntil ?? retainUntilFor(undefined);
  const items: TransactItem[] = [];
  if (pb) items.push(pb.claim);
  for (const e of entries)
    items.push({
      Put: {
        TableName: db.tables.ledger,
        Item: {
          ...e,
          pk,
          sk: e.type === 'postback' ? postbackSk(e.receivedAt, e.postbackId) : flagSk(e.at, e.seq),
          [RETAIN_ATTR]: ttl,
        },
        ConditionExpression: 'attribute_not_exists(pk)',
      },
    });
  if (entries.length > 0 || gaugesMoved || !b.summaryStored)
    items.push(dispatchUpdate(db, w, chained.head, ttl));
  const counter = gaugeCounterItem(db, b.event, b.dispatchId, deltas);
  if (counter) items.push(counter);
  if (w.next) items.push({ Put: { TableName: db.tables.timers, Item: { ...w.next } } });
  if (items.length === 0) return { result: 'written', flags: [] };
  try {
    await db.dynamo.doc.send(new TransactWriteCommand({ TransactItems: items }));
  } catch (err) {
    const failed = failedConditions(err);
    if (!failed) throw err;
    // The claim, or the postback entry itself (claims expire; entries do not), already exists.
    if (pb && (failed.has(0) || failed.has(1))) return { result: 'duplicate' };
    // A failed condition on the dispatch, or contention with another transaction.
    return { result: 'moved' };
  }
  const flags = entries.filter((e): e is FlagEntry & { hash: string } => e.type === 'flag');
  const postback = entries.find(
    (e): e is PostbackEntry & { hash: string } => e.type === 'postback',
  );
  return { result: 'written', ...(postback ? { postback } : {}), flags };
}

function dispatchUpdate(
  db: LedgerDeps,
  w: ComplianceWrite,
  head: string,
  ttl: number,
): TransactItem {
  const b = w.base;
  const sets = [
    'headHash = :head',
    'awaitingPostback = :aw',
    'nearDeadline = :near',
    `${RETAIN_ATTR} = :ttl`,
  ];
  const values: Record<string, unknown> = {
    ':ttl': ttl,
    ':prevHead': b.headHash,
    ':head': head,
    ':aw': w.gauges.awaitingPostback,
    ':near': w.gauges.nearDeadline,
  };
  const listed = appIndexUpdate(b);
  sets.push(...listed.sets);
  Object.assign(values, listed.values);
  if (head !== b.headHash) {
    // Entries were chained: the change index learns the period this happened in.
    const changed = changeKeys(b, Date.now(), db.config.LEDGER_CHECKPOINT_PERIOD_MS);
    sets.push('gsi3pk = :cpk', 'gsi3sk = :csk');
    Object.assign(values, { ':cpk': changed.gsi3pk, ':csk': changed.gsi3sk });
  }
  const conds = ['headHash = :prevHead'];
  const was = (attr: string, v: boolean | undefined) => {
    if (v === undefined) conds.push(`attribute_not_exists(${attr})`);
    else {
      conds.push(`${attr} = :was_${attr}`);
      values[`:was_${attr}`] = v;
    }
  };
  was('awaitingPostback', b.awaitingPostback);
  was('nearDeadline', b.nearDeadline);
  const last = w.changes.at(-1);
  if (last) {
    sets.push('complianceFlag = :flag', 'flagCount = :count', 'flagAt = :flagAt');
    Object.assign(values, {
      ':flag': last.flag,
      ':count': b.flagCount + w.changes.length,
      ':flagAt': last.at,
    });
  }
  // The summary the next read plans from (summary.ts). The write holds only if the head is as
  // read, so the summary always matches the entries.
  sets.push('postbackFacts = :facts', 'worstFlag = :worst');
  values[':facts'] = [...b.postbacks, ...(w.postback ? [factOf(w.postback.message)] : [])];
  values[':worst'] = worstOf([b.worstFlag, ...w.changes.map((c) => c.flag)]);
  return {
    Update: {
      TableName: db.tables.ledger,
      Key: dispatchKey(b.dispatchId),
      UpdateExpression: `SET ${sets.join(', ')}`,
      ConditionExpression: conds.join(' AND '),
      ExpressionAttributeValues: values,
    },
  };
}
