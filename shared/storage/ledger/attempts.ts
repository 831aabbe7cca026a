import { BatchWriteCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import type { TransactItem } from '../outbox/outbox.js';
import type { LedgerDeps } from './deps.js';
import { cancellationReasons, isConditionFailure, writeItems } from '../dynamo.js';
import type { DeliveryStatus } from '../../domain/ledger/delivery.js';
import { changeKeys } from './changes.js';
import {
  appIndexUpdate,
  attemptSk,
  dispatchItem,
  firstSlaCheck,
  getDispatchState,
  type AttemptEntry,
  type DispatchState,
  dispatchKey,
} from './dispatches.js';
import type { DueEntry } from '../timers/due.js';
import { DUE_ATTRS, dispatchDue } from './dispatch-due.js';
import { planListings, withListing } from './app-pages.js';
import { chainHash } from '../../domain/ledger/hash.js';
import { packDispatch } from './packed.js';
import { RETAIN_ATTR, retainUntilFor } from '../../domain/ledger/retention.js';

/** Appending attempt entries to a dispatch's chain (see dispatches.ts for the layout). */

export interface RecordAttempt {
  state: Pick<
    DispatchState,
    'dispatchId' | 'appId' | 'createdAt' | 'attempts' | 'headHash' | 'duePk' | 'dueSk'
  >;
  entry: Omit<AttemptEntry, 'type' | 'dispatchId' | 'attempt' | 'prevHash' | 'hash'>;
  deliveryStatus: DeliveryStatus;
  /** The next automatic attempt, when one is scheduled. */
  next?: DueEntry;
  /**
   * The TTL of the items this writes (retention.ts), from the app's retention; the default
   * retention from now when absent.
   */
  retainUntil?: number;
}

export type RecordResult =
  /** Written, and the due entry replaced. */
  | 'recorded'
  /** Written, but an operator re-queued the dispatch meanwhile: that entry was kept. */
  | 'recorded_requeued'
  /** Another worker already recorded this attempt number (an at-least-once duplicate). */
  | 'duplicate';

/** Re-reads allowed when other entries (postbacks, flags) move the head meanwhile. */
const MAX_RECHAINS = 5;

/**
 * Attempts up to this number are appended to the dispatch item itself (`attemptLog`); later
 * ones (only operators' resends go past the 8 automatic attempts) are items of their own, so
 * an item that every attempt rewrites stays well under DynamoDB's 400 KB.
 */
export const INLINE_ATTEMPTS = 16;

/**
 * Appends attempt `attempts + 1` and moves the dispatch on: one conditional update of the
 * dispatch item that appends the entry to its `attemptLog` and moves (or removes) its due
 * entry, conditional on the dispatch still being where this attempt found it. Past
 * `INLINE_ATTEMPTS` the entry is an item of its own, written in one transaction with that
 * update. The condition includes `headHash`: the compliance worker appends postback and flag
 * entries to the same chain, and an entry chained to a stale head would fork it. When only the
 * head moved, the entry is chained again to the new head and the write retried.
 */
export async function recordAttempt(
  db: LedgerDeps,
  r: RecordAttempt,
): Promise<{ result: RecordResult; entry: AttemptEntry }> {
  let state = r.state;
  let withDue = true;
  for (let tries = 0; ; tries++) {
    const { entry, items } = attemptItems(db, { ...r, state }, withDue);
    try {
      await writeItems(db.dynamo.doc, items);
      return { result: withDue ? 'recorded' : 'recorded_requeued', entry };
    } catch (err) {
      if (!isConditionFailure(err)) throw err;
    }
    // This attempt number is taken (a duplicate), the due entry moved (re-queued), or the
    // head moved (another entry was appended).
    const now = await getDispatchState(db, r.state.dispatchId);
    if (!now || now.attempts !== r.state.attempts || tries >= MAX_RECHAINS)
      return { result: 'duplicate', entry };
    if (now.dueSk !== state.dueSk) withDue = false;
    state = { ...state, headHash: now.headHash };
  }
}

/** A first attempt and the dispatch it creates, as written together (see the dispatcher's writer). */
export interface FirstAttemptRecord {
  dispatchId: string;
  entry: AttemptEntry;
  /**
   * The dispatch item as it stands after the attempt, holding that attempt (`firstAttempt`,
   * never updated afterwards; `dispatchItems` reads it back as the `ATT#001` entry), packed
   * (packed.ts).
   */
  head: Record<string, unknown>;
  /**
   * Timer items written before the head (so a head in the ledger means they are there): the
   * first SLA check. Never a ledger item: the ledger gets one item, which carries the retry's
   * due entry itself (dispatch-due.ts).
   */
  children: { table: string; item: Record<string, unknown> }[];
  /**
   * How the dispatch is listed by app when it went without a `gsi1` entry (app-pages.ts): by
   * another dispatch of its batch (`carrier`) or by itself (`itself`: `head` then holds the
   * listing, what a recheck after an outage writes again). Set by `firstAttemptPhases`.
   */
  listedBy?: 'carrier' | 'itself';
}

/**
 * Attempt 1 of a dispatch that is not yet in the ledger, and the dispatch itself in its state
 * after that attempt: one ledger item holds both (no write before the attempt; the event
 * stays uncommitted in Kafka until it lands, which is what redoes an attempt cut short).
 */
export function firstAttemptRecord(
  db: LedgerDeps,
  r: Omit<RecordAttempt, 'state'> & { state: DispatchState; nowMs: number },
): FirstAttemptRecord {
  const s = r.state;
  const body = {
    type: 'attempt' as const,
    dispatchId: s.dispatchId,
    attempt: 1,
    ...r.entry,
    deliveryStatus: r.deliveryStatus,
    prevHash: s.headHash,
  };
  const entry: AttemptEntry = { ...body, hash: chainHash(s.headHash, body) };
  const { duePk: _dp, dueSk: _ds, ...rest } = s;
  const after: DispatchState = {
    ...rest,
    ...changeKeys(s, r.nowMs, db.config.LEDGER_CHECKPOINT_PERIOD_MS),
    attempts: 1,
    headHash: entry.hash,
    deliveryStatus: r.deliveryStatus,
    lastAttemptAt: entry.time,
    deliveredAt: entry.outcome === 'delivered' ? entry.time : null,
    nextAttemptAt: r.next ? r.next.dueAt : null,
    ...(r.next ? dispatchDue(r.next) : {}),
  };
  const sla = firstSlaCheck(db, s, r.nowMs);
  return {
    dispatchId: s.dispatchId,
    entry,
    head: packDispatch({
      ...dispatchItem(after),
      firstAttempt: entry,
      [RETAIN_ATTR]: r.retainUntil ?? retainUntilFor(undefined),
    }),
    children: sla ? [{ table: db.tables.timers, item: { ...sla } }] : [],
  };
}

/** Puts grouped by table, as one `BatchWriteItem` request carries them (`writeBatch`). */
export type BatchPuts = Record<string, { PutRequest: { Item: Record<string, unknown> } }[]>;

function batchPuts(items: readonly { table: string; item: Record<string, unknown> }[]): BatchPuts {
  const request: BatchPuts = {};
  for (const { table, item } of items) (request[table] ??= []).push({ PutRequest: { Item: item } });
  return request;
}

/**
 * Group commit of first-attempt records whose dispatches nobody else can be writing (the
 * dispatcher's `fast` mode), as unconditional `BatchWriteItem` puts in two phases, to be written
 * in order: every record's timer items and the carriers (app-pages.ts, `planListings`: dispatch
 * items of records with no timer item, holding the listing of others of their app), then the
 * other dispatch items, so a dispatch item in the ledger always has its SLA check and, when it
 * has no `gsi1` entry, its carrier. Each phase is cut into requests of at most 25 puts for
 * `writeBatch`. A record `stamp` says no to is put without its change stamp (changes.ts: the
 * sealer's first read of its period holds it); the rest keep theirs. Each record listed by a
 * carrier says how (`listedBy`).
 */
export function firstAttemptPhases(
  db: LedgerDeps,
  recs: readonly FirstAttemptRecord[],
  stamp: (rec: FirstAttemptRecord) => boolean,
): BatchPuts[] {
  const stamped = recs.map((r) => (stamp(r) ? r.head : unstamped(r.head)));
  // A carrier goes with the first phase, so it has no SLA check of its own to wait for.
  const plan = planListings(stamped, (i) => recs[i]!.children.length === 0);
  recs.forEach((r, i) => {
    const listing = plan.carried[i];
    if (listing) {
      r.head = withListing(r.head, listing);
      r.listedBy = 'itself';
    } else if (plan.heads[i]!.gsi1pk === undefined) r.listedBy = 'carrier';
  });
  const ledger = (item: Record<string, unknown>) => ({ table: db.tables.ledger, item });
  return [
    ...batchPutsOf([
      ...recs.flatMap((r) => r.children),
      ...plan.heads.filter((_, i) => plan.carried[i]).map(ledger),
    ]),
    ...batchPutsOf(plan.heads.filter((_, i) => !plan.carried[i]).map(ledger)),
  ];
}

/** Puts one `BatchWriteItem` request takes. */
const BATCH_PUTS = 25;

/** Puts grouped for `writeBatch`, at most 25 a request. */
export function batchPutsOf(
  items: readonly { table: string; item: Record<string, unknown> }[],
): BatchPuts[] {
  const out: BatchPuts[] = [];
  for (let i = 0; i < items.length; i += BATCH_PUTS)
    out.push(batchPuts(items.slice(i, i + BATCH_PUTS)));
  return out;
}

/** A dispatch item without its change-index keys. */
function unstamped(head: Record<string, unknown>): Record<string, unknown> {
  const { gsi3pk: _pk, gsi3sk: _sk, ...rest } = head;
  return rest;
}

/**
 * One `BatchWriteItem` request (at most 25 puts). Resolves to the puts it left unprocessed
 * (`{}` when all are in); a failed request throws as it came, for the caller to classify.
 */
export async function writeBatch(db: LedgerDeps, puts: BatchPuts): Promise<BatchPuts> {
  const r = await db.dynamo.doc.send(new BatchWriteCommand({ RequestItems: puts }));
  return (r.UnprocessedItems ?? {}) as BatchPuts;
}

export type FirstAttemptsCommit =
  /** Every record is written. */
  | { committed: true }
  /**
   * Nothing is written: the dispatches of these records (indexes into `recs`) exist already,
   * and their conditions cancelled the transaction. The others may go again without them.
   */
  | { committed: false; duplicates: Set<number> };

/**
 * Group commit of first-attempt records whose dispatches someone else might have written (the
 * dispatcher's `safe` mode): one transaction putting every record's timer items and its
 * dispatch item, each ledger item only if absent (at most 100 items). A cancellation by those
 * conditions is answered (`committed: false`); every other failure, contention included, is
 * thrown as it came, for the caller to classify (`cancellationReasons`). `requestToken` makes the
 * request idempotent: sent again after an answer was lost, it succeeds without writing again.
 */
export async function commitFirstAttempts(
  db: LedgerDeps,
  recs: readonly FirstAttemptRecord[],
  requestToken?: string,
): Promise<FirstAttemptsCommit> {
  const items: TransactItem[] = [];
  /** Which record each item belongs to. */
  const owner: number[] = [];
  recs.forEach((rec, i) => {
    for (const { table, item } of [...rec.children, { table: db.tables.ledger, item: rec.head }]) {
      items.push({
        Put: {
          TableName: table,
          Item: item,
          ...(table === db.tables.ledger
            ? { ConditionExpression: 'attribute_not_exists(pk)' }
            : {}),
        },
      });
      owner.push(i);
    }
  });
  try {
    await db.dynamo.doc.send(
      new TransactWriteCommand({
        TransactItems: items,
        ...(requestToken !== undefined ? { ClientRequestToken: requestToken } : {}),
      }),
    );
    return { committed: true };
  } catch (err) {
    const c = cancellationReasons(err);
    if (c && c.failed.size > 0)
      return { committed: false, duplicates: new Set([...c.failed].map((i) => owner[i]!)) };
    throw err;
  }
}

function attemptItems(
  db: LedgerDeps,
  r: RecordAttempt,
  withDue: boolean,
): { entry: AttemptEntry; items: TransactItem[] } {
  const n = r.state.attempts + 1;
  const body = {
    type: 'attempt' as const,
    dispatchId: r.state.dispatchId,
    attempt: n,
    ...r.entry,
    deliveryStatus: r.deliveryStatus,
    prevHash: r.state.headHash,
  };
  const entry: AttemptEntry = { ...body, hash: chainHash(r.state.headHash, body) };
  const key = dispatchKey(r.state.dispatchId);
  const ttl = r.retainUntil ?? retainUntilFor(undefined);
  const inline = n <= INLINE_ATTEMPTS;
  const put: TransactItem[] = inline
    ? []
    : [
        {
          Put: {
            TableName: db.tables.ledger,
            Item: { ...entry, pk: key.pk, sk: attemptSk(n), [RETAIN_ATTR]: ttl },
            ConditionExpression: 'attribute_not_exists(pk)',
          },
        },
      ];
  const changed = changeKeys(r.state, Date.now(), db.config.LEDGER_CHECKPOINT_PERIOD_MS);
  const values: Record<string, unknown> = {
    ':n': n,
    ':prev': r.state.attempts,
    ':prevHead': r.state.headHash,
    ':head': entry.hash,
    ':status': r.deliveryStatus,
    ':at': entry.time,
    ':cpk': changed.gsi3pk,
    ':csk': changed.gsi3sk,
    ':ttl': ttl,
  };
  const sets = [
    `${RETAIN_ATTR} = :ttl`,
    'attempts = :n',
    'headHash = :head',
    'deliveryStatus = :status',
    'lastAttemptAt = :at',
    'gsi3pk = :cpk',
    'gsi3sk = :csk',
  ];
  const listed = appIndexUpdate(r.state);
  sets.push(...listed.sets);
  Object.assign(values, listed.values);
  if (inline) {
    sets.push('attemptLog = list_append(if_not_exists(attemptLog, :none), :entry)');
    Object.assign(values, { ':none': [], ':entry': [entry] });
  }
  if (entry.outcome === 'delivered') sets.push('deliveredAt = if_not_exists(deliveredAt, :at)');
  let cond = 'attempts = :prev AND headHash = :prevHead';
  let remove = '';
  if (withDue) {
    // An attempt was made: the next entry starts without snoozes.
    remove = ' REMOVE dueSnoozes';
    cond += r.state.dueSk ? ' AND dueSk = :oldSk' : ' AND attribute_not_exists(dueSk)';
    if (r.state.dueSk) values[':oldSk'] = r.state.dueSk;
    if (r.next) {
      sets.push('duePk = :dpk', 'dueSk = :dsk', 'dueKind = :dkind', 'nextAttemptAt = :next');
      Object.assign(values, {
        ':dpk': r.next.pk,
        ':dsk': r.next.sk,
        ':dkind': r.next.kind,
        ':next': r.next.dueAt,
      });
    } else {
      sets.push('nextAttemptAt = :null');
      values[':null'] = null;
      remove = ` REMOVE ${DUE_ATTRS}`; // dueSnoozes among them
    }
  }
  const update: TransactItem = {
    Update: {
      TableName: db.tables.ledger,
      Key: key,
      UpdateExpression: `SET ${sets.join(', ')}${remove}`,
      ConditionExpression: cond,
      ExpressionAttributeValues: values,
    },
  };
  return { entry, items: [...put, update] };
}
