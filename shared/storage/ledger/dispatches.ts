import { BatchGetCommand, GetCommand, type BatchGetCommandOutput } from '@aws-sdk/lib-dynamodb';
import { DISPATCH_VIEW_ATTRS } from '../../../infra/definitions/tables.js';
import type { ConsentEvent } from '../../domain/consent/events.js';
import { creationEventIds, hashedUlidRandom } from '../../domain/ids.js';
import type { TransactItem } from '../outbox/outbox.js';
import type { LedgerDeps } from './deps.js';
import { backoffMs } from '../../backoff.js';
import { isConditionFailure, updateIfHolds, writeItems } from '../dynamo.js';
import { queryAll } from '../query.js';
import type { DeliveryStatus, ErrorClass } from '../../domain/ledger/delivery.js';
import { changeKeys, needsStamp } from './changes.js';
import type { DueEntry, DueKind } from '../timers/due.js';
import { DUE_ATTRS, dispatchDue } from './dispatch-due.js';
import { slaCheckEntry } from './flag-entries.js';
import { GENESIS, chainHash, sha256Hex } from '../../domain/ledger/hash.js';
import { RETAIN_ATTR, retainUntilFor } from '../../domain/ledger/retention.js';
import { CREATION_FIELDS } from './creation.js';
import { dispatchIdOf, impliedFields, packDispatch, unpackDispatch } from './packed.js';

/**
 * The dispatch ledger in the `ledger` table. A dispatch item (pk `DSP#{id}`, sk `DSP`) holds
 * its attempt entries; postback and flag entries are items of their own under the same pk. A
 * dispatch created together with its first attempt (the dispatcher's usual path,
 * `firstAttemptRecord`) keeps that entry in `firstAttempt` (written once and never updated:
 * one ledger item per first delivery). Every attempt recorded after the item exists is
 * appended to its `attemptLog` by the update that records it (`recordAttempt`); past
 * `INLINE_ATTEMPTS` they are items of their own (sk `ATT#017`…). `dispatchItems` reads them
 * all back as `ATT#001`, `ATT#002`…. While an attempt is due the item also carries its
 * due-index entry (dispatch-due.ts). Every entry of a dispatch is hash-chained: `hash =
 * sha256(prevHash + canonical JSON of the entry without hash)`, the dispatch's own creation
 * fields being the first entry; the item keeps `headHash`.
 * A dispatch item is written packed (packed.ts): its body and `firstAttempt` deflated into
 * `dz`, what follows from the rest left out; every reader here puts them back
 * (`getDispatchState`, `dispatchItems`, `toDispatch`).
 */

export const dispatchPk = (id: string) => `DSP#${id}`;
/** The dispatch item's sort key (its entries are `ATT#…`, `PBK#…`, … under the same pk). */
export const DISPATCH_SK = 'DSP';
/** The key of a dispatch item. */
export const dispatchKey = (id: string) => ({ pk: dispatchPk(id), sk: DISPATCH_SK });
/** Whether a ledger item is a dispatch item (not one of its entries, nor a checkpoint). */
export const isDispatchHead = (item: object | undefined): boolean =>
  (item as { sk?: unknown } | undefined)?.sk === DISPATCH_SK;
export const attemptSk = (n: number) => `ATT#${String(n).padStart(3, '0')}`;

/** Fields of the dispatch that never change, and so form its (first) chained entry. */
export interface DispatchCreation {
  type: 'dispatch';
  dispatchId: string;
  eventId: string;
  event: ConsentEvent['type'];
  appId: string;
  environment: ConsentEvent['environment'];
  referenceId: string;
  /** The event's createdAt. */
  createdAt: string;
  dispatchedAt: string;
  postbackRequired: boolean;
  postbackDueAt: string | null;
  bodySha256: string;
  prevHash: string;
}

/** The stored dispatch item (keys aside); `attempts` is the number of attempts made. */
export interface DispatchRecord extends Omit<DispatchCreation, 'type' | 'prevHash'> {
  deliveryStatus: DeliveryStatus;
  attempts: number;
  lastAttemptAt: string | null;
  nextAttemptAt: string | null;
  deliveredAt: string | null;
  complianceFlag: null | string;
  entryHash: string;
  headHash: string;
}

/** The API shape: the attempt count is `attemptCount` (`attempts` lists the attempts). */
export type Dispatch = Omit<DispatchRecord, 'attempts'> & { attemptCount: number };

/** Everything the worker needs to attempt a dispatch. */
export interface DispatchState extends DispatchRecord {
  body: string;
  traceparent?: string;
  /** The attempt due next, while one is (dispatch-due.ts): the due-index's keys and kind. */
  duePk?: string;
  dueSk?: string;
  dueKind?: DueKind;
  /** How often the due entry was snoozed since the last attempt (the sweeper's back-off). */
  dueSnoozes?: number;
  /** Change-index keys (see changes.ts): the period the dispatch last changed in. */
  gsi3pk?: string;
  gsi3sk?: string;
}

export interface AttemptEntry {
  type: 'attempt';
  dispatchId: string;
  attempt: number;
  trigger: 'first' | 'retry' | 'manual';
  time: string;
  durationMs: number;
  /** Origin and path the request went to (never the query, which may hold tokens). */
  destination: string;
  statusCode?: number;
  errorClass?: ErrorClass;
  errorMessage?: string;
  responseExcerpt: string;
  outcome: 'delivered' | 'failed';
  /** The dispatch's status after this attempt (chained, so the head's status can be checked). */
  deliveryStatus?: DeliveryStatus;
  prevHash: string;
  hash: string;
}

/**
 * The dispatch id of an event at an endpoint: `dsp_` + a ULID whose time part is the event's
 * and whose random part is a hash of (event, endpoint). Deterministic, so a redelivered
 * event (even after consumer-idempotency records expired) finds its existing dispatch.
 */
export function dispatchIdFor(eventId: string, endpoint: string): string {
  const time = eventId.replace(/^evt_/, '').slice(0, 10);
  return `dsp_${time}${hashedUlidRandom(`${eventId}|${endpoint}`)}`;
}

/** `CREATION_FIELDS`, checked against `DispatchCreation` (creation.ts cannot import it). */
const CREATION: readonly (keyof DispatchCreation)[] = CREATION_FIELDS;

export function creationOf(item: Record<string, unknown>): DispatchCreation {
  return Object.fromEntries(CREATION.map((k) => [k, item[k]])) as unknown as DispatchCreation;
}

/** A dispatch to create before any attempt (`newDispatchItems`). */
export interface NewDispatchInput {
  event: ConsentEvent;
  body: string;
  endpoint: string;
  nowMs: number;
  due: (id: string) => DueEntry;
  traceparent?: string | undefined;
  /** The TTL of the dispatch item (retention.ts); the default retention from now when absent. */
  retainUntil?: number | undefined;
}

export interface NewDispatch {
  state: DispatchState;
  items: TransactItem[];
}

/** A dispatch as created, before any attempt: not yet written anywhere. */
export function newDispatchState(o: {
  event: ConsentEvent;
  body: string;
  endpoint: string;
  nowMs: number;
  traceparent?: string | undefined;
}): DispatchState {
  const e = o.event;
  const creation: DispatchCreation = {
    type: 'dispatch',
    dispatchId: dispatchIdFor(e.id, o.endpoint),
    eventId: e.id,
    event: e.type,
    appId: e.appId,
    environment: e.environment,
    referenceId: e.data.referenceId,
    createdAt: e.createdAt,
    dispatchedAt: new Date(o.nowMs).toISOString(),
    postbackRequired: e.data.postback?.required === true,
    postbackDueAt: e.data.postback?.dueAt ?? null,
    bodySha256: sha256Hex(o.body),
    prevHash: GENESIS,
  };
  const hash = chainHash(GENESIS, { ...creation });
  return {
    ...creation,
    deliveryStatus: 'pending',
    attempts: 0,
    lastAttemptAt: null,
    nextAttemptAt: new Date(o.nowMs).toISOString(),
    deliveredAt: null,
    complianceFlag: null,
    entryHash: hash,
    headHash: hash,
    body: o.body,
    ...(o.traceparent ? { traceparent: o.traceparent } : {}),
  };
}

/** The one endpoint an app's events are dispatched to (workers/dispatcher): its webhook. */
export const webhookEndpoint = (appId: string) => `${appId}:webhook`;

/** The keys of a dispatch's entry in `gsi2` (by principal, then event time). */
export function principalIndexKeys(d: {
  appId: string;
  referenceId: string;
  createdAt: string;
  dispatchId: string;
}) {
  return {
    gsi2pk: `APP#${d.appId}#REF#${d.referenceId}`,
    gsi2sk: `${d.createdAt}#${d.dispatchId}`,
  };
}

/**
 * Whether a dispatch is found by principal through its consent (principal.ts) rather than by a
 * `gsi2` entry: its event is one of a transaction's creation events, whose ids follow from the
 * transaction (ids.ts, `creationEventIds`), sent to the app's webhook. Decided from the signed
 * body itself, so it holds exactly when the principal's reader derives this dispatch's id.
 */
export function foundThroughConsent(state: Pick<DispatchState, 'body' | 'appId' | 'dispatchId'>) {
  let e: { id?: unknown; createdAt?: unknown; data?: { consentId?: unknown } } | null;
  try {
    e = JSON.parse(state.body) as typeof e;
  } catch {
    return false;
  }
  const consentId = e?.data?.consentId;
  if (typeof e?.id !== 'string' || typeof consentId !== 'string' || typeof e.createdAt !== 'string')
    return false;
  const ms = Date.parse(e.createdAt);
  return (
    Number.isFinite(ms) &&
    creationEventIds(consentId, ms).includes(e.id) &&
    dispatchIdFor(e.id, webhookEndpoint(state.appId)) === state.dispatchId
  );
}

/**
 * The dispatch item, before packing: the state with its keys, by app + time and, unless the
 * dispatch is found through its consent (`foundThroughConsent`), by principal + time.
 */
export function dispatchItem(state: DispatchState): Record<string, unknown> {
  return {
    ...state,
    pk: dispatchPk(state.dispatchId),
    sk: DISPATCH_SK,
    ...appIndexKeys(state),
    ...(foundThroughConsent(state) ? {} : principalIndexKeys(state)),
  };
}

/** A dispatch's keys in `gsi1`: by app, then event time and id. */
export function appIndexKeys(d: { appId: string; createdAt: string; dispatchId: string }) {
  return { gsi1pk: `APP#${d.appId}`, gsi1sk: `${d.createdAt}#${d.dispatchId}` };
}

/**
 * What an update of a dispatch item that moves its `retainUntil` on adds: its `gsi1` keys when
 * it has none. A dispatch named by a carrier (app-pages.ts) would otherwise outlive it: the
 * carrier is kept from its own last change, not this one's. An index write then, once; one
 * already in `gsi1` is left as it is.
 */
export function appIndexUpdate(d: { appId: string; createdAt: string; dispatchId: string }) {
  const k = appIndexKeys(d);
  return {
    sets: ['gsi1pk = if_not_exists(gsi1pk, :g1pk)', 'gsi1sk = if_not_exists(gsi1sk, :g1sk)'],
    values: { ':g1pk': k.gsi1pk, ':g1sk': k.gsi1sk },
  };
}

/**
 * A dispatch needing a postback gets its first SLA check, due when its SLA clock starts (the
 * event's creation; never in the past): the compliance worker counts it as awaiting and
 * schedules the next check (near-deadline mark, deadlines).
 */
export function firstSlaCheck(db: LedgerDeps, state: DispatchState, nowMs: number) {
  if (!state.postbackRequired) return undefined;
  const firstCheck = Math.max(nowMs, Date.parse(state.createdAt) || 0);
  return slaCheckEntry(state.dispatchId, state.appId, firstCheck, db.config.TIMER_SHARDS);
}

/**
 * The items that create a dispatch with its due entry (on the dispatch item itself, see
 * dispatch-due.ts) before any attempt, and its first SLA check when it needs a postback: the
 * path of a dispatch whose first attempt is left to the due-index or must be findable by a
 * postback before it is made.
 */
export function newDispatchItems(db: LedgerDeps, o: NewDispatchInput): NewDispatch {
  const fresh = newDispatchState(o);
  const due = o.due(fresh.dispatchId);
  const state: DispatchState = {
    ...fresh,
    ...dispatchDue(due),
    ...changeKeys(fresh, Date.now(), db.config.LEDGER_CHECKPOINT_PERIOD_MS),
  };
  const sla = firstSlaCheck(db, state, o.nowMs);
  return {
    state,
    items: [
      {
        Put: {
          TableName: db.tables.ledger,
          Item: packDispatch({
            ...dispatchItem(state),
            [RETAIN_ATTR]: o.retainUntil ?? retainUntilFor(undefined),
          }),
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      },
      ...(sla ? [{ Put: { TableName: db.tables.timers, Item: { ...sla } } }] : []),
    ],
  };
}

/**
 * Writes a new dispatch with its due entry (`newDispatchItems`), the dispatch item only if
 * absent: one conditional put, or one transaction when an SLA check goes with it.
 * `duplicate` (nothing written) when the dispatch exists already.
 */
export async function createDispatch(
  db: LedgerDeps,
  o: NewDispatchInput,
): Promise<{ result: 'recorded' | 'duplicate'; state: DispatchState }> {
  const created = newDispatchItems(db, o);
  try {
    await writeItems(db.dynamo.doc, created.items);
    return { result: 'recorded', state: created.state };
  } catch (err) {
    if (isConditionFailure(err)) return { result: 'duplicate', state: created.state };
    throw err;
  }
}

/**
 * Moves a dispatch's due entry from `from` to `to`: one update of the dispatch item,
 * conditional on `from` still being its entry (and, when given, on its attempt count); a
 * `snoozed` move also counts itself in `dueSnoozes`. False (nothing written) when a condition
 * did not hold.
 */
export async function moveDispatchDue(
  db: LedgerDeps,
  from: DueEntry,
  to: DueEntry,
  attempts?: number,
  snoozed = false,
): Promise<boolean> {
  return updateIfHolds(db.dynamo.doc, {
    TableName: db.tables.ledger,
    Key: dispatchKey(from.dispatchId),
    UpdateExpression: `SET duePk = :pk, dueSk = :sk, dueKind = :kind${snoozed ? ' ADD dueSnoozes :one' : ''}`,
    ConditionExpression: attempts === undefined ? 'dueSk = :old' : 'dueSk = :old AND attempts = :n',
    ExpressionAttributeValues: {
      ':pk': to.pk,
      ':sk': to.sk,
      ':kind': to.kind,
      ':old': from.sk,
      ...(snoozed ? { ':one': 1 } : {}),
      ...(attempts === undefined ? {} : { ':n': attempts }),
    },
  });
}

/**
 * Removes a dispatch's due entry (and so takes it out of the due-index), if that is still
 * `dueSk` (otherwise nothing changes).
 */
export async function detachDispatchDue(
  db: LedgerDeps,
  dispatchId: string,
  dueSk: string,
): Promise<void> {
  await updateIfHolds(db.dynamo.doc, {
    TableName: db.tables.ledger,
    Key: dispatchKey(dispatchId),
    UpdateExpression: `REMOVE ${DUE_ATTRS}`,
    ConditionExpression: 'dueSk = :sk',
    ExpressionAttributeValues: { ':sk': dueSk },
  });
}

/** Which of these dispatches exist in the ledger (consistent reads, 100 keys a request). */
export async function existingDispatches(db: LedgerDeps, ids: string[]): Promise<Set<string>> {
  return new Set((await recordedDispatches(db, ids)).keys());
}

/** What a ledger read by key returns of each item. */
type Projection = {
  ProjectionExpression: string;
  ExpressionAttributeNames?: Record<string, string>;
};

/**
 * The dispatch items of these ids that exist (BatchGetItem, consistent, 100 keys a request,
 * unprocessed keys asked again with a back-off), with only what `projection` names.
 */
export function readDispatchItems(
  db: LedgerDeps,
  ids: readonly string[],
  projection: Projection,
): Promise<Record<string, unknown>[]> {
  return readLedgerItems(
    db,
    ids.map((id) => dispatchKey(id)),
    projection,
  );
}

/** The ledger items of these keys that exist, read as `readDispatchItems` reads. */
export async function readLedgerItems(
  db: LedgerDeps,
  itemKeys: readonly Record<string, unknown>[],
  projection: Projection,
): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = [];
  for (let i = 0; i < itemKeys.length; i += 100) {
    let keys: Record<string, unknown>[] | undefined = itemKeys.slice(i, i + 100);
    for (let round = 0; keys && keys.length > 0; round++) {
      if (round > 0)
        await new Promise((r) => setTimeout(r, backoffMs(round, { baseMs: 50, maxMs: 2_000 })));
      const r: BatchGetCommandOutput = await db.dynamo.doc.send(
        new BatchGetCommand({
          RequestItems: { [db.tables.ledger]: { Keys: keys, ConsistentRead: true, ...projection } },
        }),
      );
      out.push(...(r.Responses?.[db.tables.ledger] ?? []));
      keys = r.UnprocessedKeys?.[db.tables.ledger]?.Keys;
    }
  }
  return out;
}

/**
 * The dispatches of these that exist in the ledger (consistent reads, 100 keys a request), by
 * id, each with what `stampLate` needs and whether it carries a change stamp.
 */
export async function recordedDispatches(
  db: LedgerDeps,
  ids: string[],
): Promise<Map<string, Unstamped & { stamped: boolean }>> {
  const found = new Map<string, Unstamped & { stamped: boolean }>();
  const items = await readDispatchItems(db, [...new Set(ids)], {
    ProjectionExpression: 'pk, dispatchId, appId, createdAt, gsi3pk',
  });
  for (const item of items) {
    const id = String(dispatchIdOf(item));
    found.set(id, {
      dispatchId: id,
      appId: String(item.appId),
      createdAt: String(item.createdAt),
      stamped: item.gsi3pk !== undefined,
    });
  }
  return found;
}

export interface Unstamped {
  dispatchId: string;
  appId: string;
  createdAt: string;
}

/**
 * Stamps dispatch items that landed without a change stamp and now need one (`needsStamp` at
 * `nowMs`): one conditional update each, only while the item exists and has no stamp (a later
 * change stamped it already). Resolves to how many were stamped; store errors are thrown.
 */
export async function stampLate(
  db: LedgerDeps,
  items: readonly Unstamped[],
  nowMs: number,
): Promise<number> {
  const late = items.filter((d) => needsStamp(d.createdAt, nowMs, db.config));
  const done = await Promise.all(
    late.map((d) => {
      const k = changeKeys(d, nowMs, db.config.LEDGER_CHECKPOINT_PERIOD_MS);
      return updateIfHolds(db.dynamo.doc, {
        TableName: db.tables.ledger,
        Key: dispatchKey(d.dispatchId),
        UpdateExpression: 'SET gsi3pk = :pk, gsi3sk = :sk',
        ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(gsi3pk)',
        ExpressionAttributeValues: { ':pk': k.gsi3pk, ':sk': k.gsi3sk },
      });
    }),
  );
  return done.filter(Boolean).length;
}

export async function getDispatchState(
  db: LedgerDeps,
  dispatchId: string,
): Promise<DispatchState | undefined> {
  const r = await db.dynamo.doc.send(
    new GetCommand({
      TableName: db.tables.ledger,
      Key: dispatchKey(dispatchId),
      ConsistentRead: true,
    }),
  );
  if (!r.Item) return undefined;
  const state = unpackDispatch(r.Item);
  // Only an item changed by hand (or of a newer format) has a packed body that cannot be read:
  // nothing is sent from it, and verification reports its chain (dispatchItems).
  if (state.packedUnreadable)
    throw new Error(`dispatch ${dispatchId}: its packed body cannot be read; nothing is sent`);
  return state as DispatchState;
}

/**
 * A dispatch as the API shows it, from its item or from an entry of the ledger's `gsi1`/`gsi2`
 * (which hold these attributes and no others besides the keys): `DISPATCH_VIEW_ATTRS`, with
 * `attempts` as `attemptCount`. Everything else on the item is the worker's: the body, the
 * attempt entries, the due entry, the compliance worker's bookkeeping, the storage keys.
 */
export function toDispatch(stored: Record<string, unknown>): Dispatch {
  const item = impliedFields(stored);
  const out: Record<string, unknown> = {};
  for (const k of DISPATCH_VIEW_ATTRS) if (k !== 'attempts' && k in item) out[k] = item[k];
  return { ...out, attemptCount: Number(item.attempts ?? 0) } as unknown as Dispatch;
}

export function toAttempt(item: Record<string, unknown>): Omit<AttemptEntry, 'type'> {
  const { pk: _pk, sk: _sk, type: _type, [RETAIN_ATTR]: _ttl, ...entry } = item;
  return entry as Omit<AttemptEntry, 'type'>;
}

/** Raw items of a dispatch (the dispatch item first, then its entries in order). */
export async function dispatchItems(
  db: LedgerDeps,
  dispatchId: string,
): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = await queryAll(db.dynamo.doc, {
    TableName: db.tables.ledger,
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': dispatchPk(dispatchId) },
    ConsistentRead: true,
  });
  // "ATT#…" sorts before "DSP": put the dispatch first.
  const stored = out.find((i) => isDispatchHead(i));
  const found = stored && unpackDispatch(stored);
  const entries = out.filter((i) => !isDispatchHead(i));
  if (!found) return entries;
  // Attempts kept in the dispatch item are read as the entries they are (an item of its own
  // under the same key, which only a tamperer would add, wins).
  const { firstAttempt, attemptLog, ...head } = found;
  const kept = [
    ...(firstAttempt ? [firstAttempt as Record<string, unknown>] : []),
    ...((attemptLog as Record<string, unknown>[] | undefined) ?? []),
  ];
  const own = new Set(entries.map((i) => i.sk));
  for (const a of kept) {
    const sk = attemptSk(Number(a.attempt));
    if (!own.has(sk)) entries.push({ ...a, pk: head.pk, sk });
  }
  entries.sort((a, b) => (String(a.sk) < String(b.sk) ? -1 : String(a.sk) > String(b.sk) ? 1 : 0));
  return [head, ...entries];
}
