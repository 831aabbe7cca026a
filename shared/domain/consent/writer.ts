import { AppError } from '../../errors.js';
import { ensureFamily } from '../../storage/timers/due.js';
import type { TransactItem } from '../../storage/outbox/outbox.js';
import type { Runtime } from '../../runtime.js';
import { cancellationReasons, writeItems } from '../../storage/dynamo.js';
import { ownCancellation } from '../../storage/group-commit.js';
import { newEventId, newReferenceId, recordNumber, recordUuid, transactionUuid } from '../ids.js';
import type { App } from '../types.js';
import { noteActivity } from './activity.js';
import { assertParentalGate } from './apply.js';
import { ATTR, packMessages } from '../../storage/outbox/commits.js';
import { certainlyNotApplied } from '../../storage/outbox/outbox.js';
import {
  carriesDerived,
  creationIds,
  creations,
  deriveCreationMessages,
  historyOf,
} from './carried.js';
import { planEvents, toOutboxItem, type ConsentEvent, type EventContext } from './events.js';
import type {
  Actor,
  ConsentRecord,
  RecordChange,
  StoredPrincipal,
  StoredTransaction,
} from './model.js';
import {
  derivedReferenceOf,
  keys,
  loadPrincipal,
  loadPrincipalKey,
  loadTransactionAt,
  notDerivedUser,
  putPrincipal,
  putTransaction,
  putUser,
  withHistory,
} from '../../storage/consents/repository.js';
import { timerItems, withFirstTimer } from './timers.js';

/**
 * The write paths of the consent domain. Each operation is ONE `rt.outbox.commit`: the
 * transaction item (with its history), the user's claim items and the events, so a failure
 * leaves nothing half-written and no event without its change. One exception: a new principal
 * and its first transaction, when they are all there is, are two conditional puts (`split`), and
 * a failure between the two leaves a principal with no transaction, no consent and no event.
 */

const MAX_ATTEMPTS = 5;

export interface WriteContext {
  rt: Runtime;
  app: App;
  actor: Actor;
  /** The time of the change; the timers worker passes its (injectable) clock. */
  now?: () => Date;
  /** Why the service itself changes the consent; carried by the events that say so. */
  reason?: 'inactivity';
  /**
   * Aborted once nobody waits for the outcome (the HTTP caller hung up, or the deadline answered
   * it 503; `abandonedBy`): a change not yet sent to the store is then not made, since nobody
   * would learn that it was. Under overload, callers that gave up waiting would otherwise cost
   * the store the very work that made them wait.
   */
  signal?: AbortSignal;
}

/** Changes the service makes on its own (timers): not the principal's activity. */
const bySystem = (a: Actor) => a.credential.startsWith('system:');

const clock = (ctx: WriteContext) => ctx.now?.() ?? new Date();

/** What a commit adds beyond the planned events: extra events. */
interface CommitOptions {
  events?: ((c: EventContext) => ConsentEvent[]) | undefined;
  /** Write the transaction item alone, not in a transaction, when it is all there is. */
  alone?: boolean;
}

/** An extra conditional write; `conflict` is the 409 detail when its condition fails. */
export interface ExtraWrite {
  item: TransactItem;
  conflict?: string;
}

const busy = () =>
  new AppError('SVC_UNAVAILABLE', 'The consent is being changed concurrently; retry shortly', {
    retryAfterS: 1,
  });

async function commit(
  ctx: WriteContext,
  txn: StoredTransaction,
  changes: readonly RecordChange[],
  items: TransactItem[],
  created: boolean,
  now: Date,
  o: CommitOptions = {},
): Promise<ConsentEvent[]> {
  // A creation's events follow from the transaction item (carried.ts): ids derived from its id.
  const derivable = created && ctx.reason === undefined;
  const ec: EventContext = {
    app: ctx.app,
    txn,
    changes,
    created,
    now,
    baseUrl: ctx.rt.config.PUBLIC_BASE_URL.replace(/\/+$/, ''),
    newId: derivable ? creationIds(txn) : newEventId,
    reason: ctx.reason,
  };
  const extra = o.events?.(ec) ?? [];
  const events = [...planEvents(ec), ...extra];
  const timers = timerItems(ctx.rt, ctx.app, txn, { created, changes, nowMs: now.getTime() });
  // The transaction item may carry a due entry itself (its first timer, `withFirstTimer`).
  if (timers.length > 0 || txn.duesk !== undefined)
    await ensureFamily(ctx.rt, 'expiry', ctx.rt.config.TIMER_SHARDS, now.getTime());
  const all = [...items, ...timers];
  if (all.length + events.length > 100)
    throw new AppError('SVC_VALIDATION_FAILED', 'Too many purposes in one change', {
      errors: [{ path: '/consents', message: 'too many purposes for one change' }],
    });
  // A new transaction's item carries its own events: no outbox item for the commonest write.
  // Unless the creation has events beyond those its records imply, it holds only the relay's
  // keys, and the relay rebuilds the events from the item (carried.ts).
  const carrier = created
    ? all.findIndex((i) => i.Put?.Item?.sk === keys.transaction('', '', txn.transactionId).sk)
    : -1;
  const derived = carrier >= 0 && derivable && extra.length === 0;
  // With ctx.signal aborted (nobody waits for the outcome), the group commit refuses the write
  // unsent: SVC_UNAVAILABLE, nothing applied.
  await ctx.rt.outbox.commit(
    all,
    events.map((e) => toOutboxItem(e, ctx.rt.topics.consentEvents)),
    {
      ...(carrier >= 0 ? { carrier } : {}),
      derived,
      signal: ctx.signal,
      alone: o.alone === true,
    },
  );
  return events;
}

/**
 * A new transaction as stored: its creation history implied by `createdBy` (carried.ts), with
 * the app's environment, which its creation events are rebuilt with.
 */
function asCreated(ctx: WriteContext, t: StoredTransaction): StoredTransaction {
  return { ...t, createdBy: ctx.actor, environment: ctx.app.environment };
}

/**
 * The transaction a change starts from, with what its item left implied written out: its
 * history, and, while it is as created, its creation events packed in the carrier attribute (the
 * relay could no longer rebuild them once the records move on).
 */
function explicit(rt: WriteContext['rt'], current: StoredTransaction): StoredTransaction {
  const out: StoredTransaction = { ...current, history: historyOf(current) };
  if (carriesDerived(current)) {
    const messages = deriveCreationMessages(current as unknown as Record<string, unknown>, {
      topic: rt.topics.consentEvents,
      baseUrl: rt.config.PUBLIC_BASE_URL,
    });
    if (messages) Object.assign(out, { [ATTR.packed]: packMessages(messages) });
  }
  return out;
}

export interface NewTransaction {
  /** Everything but the keys, which are assigned here, with the transaction id it is given. */
  build(
    referenceId: string,
    now: string,
    transactionId: string,
  ): Omit<StoredTransaction, 'referenceId' | 'version'>;
  principal: Pick<StoredPrincipal, 'userId' | 'email'>;
  /** Also claim the user id (record API): a second claim for the user is 409. */
  userId?: string;
  /** The notice's reminder lead time (default 30 days). */
  reminderDaysBefore?: number | undefined;
  /** Events beyond those the new records imply (parental verification required). */
  events?: ((c: EventContext) => ConsentEvent[]) | undefined;
}

/**
 * Creates a principal and its first transaction. Without a user id the referenceId is random,
 * and a collision (conditional put) is retried with a new one.
 *
 * With a user id (record API) the principal goes to the referenceId the user id derives to
 * (ids.ts, `derivedReferenceId`) and stands for the user's claim itself, holding the user's
 * transaction id: two items. A user pointer item exists only beside another principal at that
 * referenceId, so the principal's conditional put there is the whole check. If that referenceId
 * is taken by another principal (another user id derived to it, or a random one), the principal
 * gets a random referenceId and a user pointer item, and the transaction checks the derived
 * principal is not this user's. Either way a second claim of the user id fails: 409.
 *
 * When principal and transaction are all it writes, they go as two conditional puts, the
 * principal first (`split`); with a pointer item, or when it takes over a principal left
 * without its transaction, in one transaction.
 */
export async function createWithPrincipal(
  ctx: WriteContext,
  o: NewTransaction,
): Promise<StoredTransaction> {
  const { appId } = ctx.app;
  const derivedRef =
    o.userId === undefined ? undefined : await derivedReferenceOf(ctx.rt, appId, o.userId);
  let useDerived = derivedRef !== undefined;
  /** This user's principal whose first transaction never landed (`split`): taken over. */
  let adopt: string | undefined;
  const taken = () =>
    new AppError('SVC_CONFLICT', 'This user already has a consent record; use PUT');
  const claimsFor = (referenceId: string, transactionId: string, at: string) =>
    o.userId === undefined
      ? []
      : userClaimItems(ctx, {
          userId: o.userId,
          derivedRef: derivedRef!,
          referenceId,
          transactionId,
          at,
        });
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const now = clock(ctx);
    const referenceId = useDerived ? derivedRef! : newReferenceId();
    // `adopt` is set only with `useDerived` (`derivedTaken`).
    const transactionId = adopt ?? newTransactionId(referenceId);
    const { txn, changes, principal } = firstItems(ctx, o, referenceId, transactionId, {
      now,
      holdsUser: useDerived,
    });
    if (adopt) takeOver(principal, o.userId!, adopt);
    const claims = claimsFor(referenceId, transactionId, txn.createdAt);
    try {
      await writeFirst(ctx, { txn, changes, principal, claims, now, events: o.events }, !adopt);
      return txn;
    } catch (err) {
      const c = cancellationReasons(err);
      if (!c) throw err;
      if (c.failed.has(2) || c.failed.has(3)) throw taken();
      // The transaction exists: this user's, written by the request that left the principal
      // behind (or by another taking it over).
      if (c.failed.has(1) && useDerived) throw taken();
      if (c.failed.has(0) && useDerived) {
        const next = await derivedTaken(ctx, o.userId!, referenceId);
        if (next === 'taken') throw taken();
        adopt = next.adopt;
        useDerived = next.derived;
        continue;
      }
      if (c.failed.has(0) || c.failed.has(1) || c.contention) continue;
      throw err;
    }
  }
  throw busy();
}

/**
 * Writes a new principal with its first transaction: as two puts (`split`) when `splittable` and
 * they are all there is, else in one transaction with the user's claim items. Refusals come by
 * index either way: 0 the principal, 1 the transaction, 2 and 3 the claim items.
 */
async function writeFirst(
  ctx: WriteContext,
  w: {
    txn: StoredTransaction;
    changes: readonly RecordChange[];
    principal: TransactItem;
    claims: TransactItem[];
    now: Date;
    events: CommitOptions['events'];
  },
  splittable: boolean,
): Promise<void> {
  if (w.claims.length === 0 && splittable)
    return split(ctx, w.txn, w.changes, w.principal, w.now, w.events);
  const items = [w.principal, putTransaction(ctx.rt, w.txn), ...w.claims];
  await commit(ctx, w.txn, w.changes, items, true, w.now, { events: w.events });
}

/** A new principal's items: its first transaction (with the changes it makes) and its put. */
function firstItems(
  ctx: WriteContext,
  o: NewTransaction,
  referenceId: string,
  transactionId: string,
  w: { now: Date; holdsUser: boolean },
) {
  const at = w.now.toISOString();
  const built: StoredTransaction = {
    ...o.build(referenceId, at, transactionId),
    referenceId,
    version: 1,
  };
  const txn = withFirstTimer(
    ctx.rt,
    ctx.app,
    asCreated(ctx, built),
    w.now.getTime(),
    o.reminderDaysBefore,
  );
  const principal = putPrincipal(ctx.rt, {
    appId: ctx.app.appId,
    referenceId,
    ...o.principal,
    ...(w.holdsUser ? { userTransactionId: transactionId } : {}),
    createdAt: at,
    updatedAt: at,
    lastActiveAt: at,
  });
  return { txn, changes: creations(built), principal };
}

/**
 * A new principal and its first transaction as two conditional puts, each billed once (in one
 * transaction each is billed twice): the principal first, which claims the referenceId (and at
 * a user's derived referenceId, the user), then the transaction with its events. Refusals come
 * as the transaction's would: index 0 the principal, 1 the transaction. Nothing reads a principal without its transaction as a consent: a process
 * that dies between the two leaves a principal with no transaction, which holds no consent and
 * sends no event. Such a principal is removed at once when the transaction was certainly not
 * written; otherwise the user's next creation takes it over (`orphanedFirst`), and at a random
 * referenceId (a widget capture, which gives the principal no e-mail and no user id) nobody
 * ever learns of it.
 */
async function split(
  ctx: WriteContext,
  txn: StoredTransaction,
  changes: readonly RecordChange[],
  principal: TransactItem,
  now: Date,
  events: CommitOptions['events'],
): Promise<void> {
  const item = principal.Put!.Item!;
  await ctx.rt.outbox.group.single(
    principal,
    ctx.signal,
    (stored) =>
      stored.createdAt === item.createdAt &&
      stored.userTransactionId === item.userTransactionId &&
      stored.email === item.email,
  );
  try {
    await commit(ctx, txn, changes, [putTransaction(ctx.rt, txn)], true, now, {
      events,
      alone: true,
    });
  } catch (err) {
    // The transaction's refusal as the combined write's: its reason at index 1.
    const c = cancellationReasons(err);
    if (c)
      throw ownCancellation(err, [
        { Code: 'None' },
        { Code: c.failed.has(0) ? 'ConditionalCheckFailed' : 'None' },
      ]);
    if (certainlyNotApplied(err)) await dropPrincipal(ctx, principal);
    throw err;
  }
}

/** Removes the principal `split` wrote when its transaction was certainly not written. */
async function dropPrincipal(ctx: WriteContext, principal: TransactItem): Promise<void> {
  const item = principal.Put!.Item! as Record<string, string>;
  try {
    await writeItems(ctx.rt.dynamo.doc, [
      {
        Delete: {
          TableName: principal.Put!.TableName,
          Key: { pk: item.pk, sk: item.sk },
          // Only the one written above, untouched since: activity moves `lastActiveAt`, and a
          // creation taking it over writes its own `createdAt`.
          ConditionExpression: 'createdAt = :at AND lastActiveAt = :at',
          ExpressionAttributeValues: { ':at': item.createdAt },
        },
      },
    ]);
  } catch (err) {
    ctx.rt.log.warn(
      { err, referenceId: item.referenceId },
      'a principal whose first transaction failed was not removed; the user’s next creation takes it over',
    );
  }
}

/**
 * The derived referenceId is taken: by this user (its principal, or its claim, repository.ts
 * `putClaim`: 409; or its principal left without its transaction: taken over), by someone else
 * (a random referenceId next), or by nobody any more (the same again).
 */
async function derivedTaken(
  ctx: WriteContext,
  userId: string,
  referenceId: string,
): Promise<'taken' | { adopt?: string; derived: boolean }> {
  const holder = await loadPrincipalKey(ctx.rt, ctx.app.appId, referenceId);
  if (!holder) return { derived: true };
  if (holder.userId !== userId) return { derived: false };
  const adopt = await orphanedFirst(ctx, holder);
  return adopt === undefined ? 'taken' : { adopt, derived: true };
}

/**
 * The transaction id of this user's principal when that transaction does not exist (a creation
 * cut short between its two puts, `split`), to be taken over; undefined when the user has its
 * consent record (or holds the referenceId by a claim).
 */
async function orphanedFirst(
  ctx: WriteContext,
  holder: { referenceId: string; userTransactionId?: string; claimOf?: string },
): Promise<string | undefined> {
  if (holder.claimOf !== undefined || holder.userTransactionId === undefined) return undefined;
  const t = await loadTransactionAt(
    ctx.rt,
    ctx.app.appId,
    holder.referenceId,
    holder.userTransactionId,
  );
  return t ? undefined : holder.userTransactionId;
}

/** The principal put made to replace this user's principal that has no transaction. */
function takeOver(principal: TransactItem, userId: string, transactionId: string): void {
  const put = principal.Put!;
  put.ConditionExpression = 'userId = :u AND userTransactionId = :t';
  put.ExpressionAttributeValues = { ':u': userId, ':t': transactionId };
}

/**
 * What claims a new user beside its principal and transaction: nothing at its derived
 * referenceId, where the principal is the claim; elsewhere a pointer item, and a check that the
 * derived principal is not this user's.
 */
function userClaimItems(
  ctx: WriteContext,
  u: { userId: string; derivedRef: string; referenceId: string; transactionId: string; at: string },
): TransactItem[] {
  const { appId } = ctx.app;
  if (u.referenceId === u.derivedRef) return [];
  return [
    putUser(ctx.rt, {
      appId,
      userId: u.userId,
      referenceId: u.referenceId,
      transactionId: u.transactionId,
      createdAt: u.at,
    }),
    notDerivedUser(ctx.rt, appId, u.derivedRef, u.userId),
  ];
}

/**
 * Adds a new transaction to an existing principal (a returning visitor). The principal must
 * still exist when the write commits (404 otherwise); the transaction inherits its userId. The
 * same write records the principal's activity.
 */
export async function createInPrincipal(
  ctx: WriteContext,
  referenceId: string,
  build: NewTransaction['build'],
  reminderDaysBefore?: number,
  events?: NewTransaction['events'],
): Promise<StoredTransaction> {
  const principal = await loadPrincipal(ctx.rt, ctx.app.appId, referenceId);
  const unknown = () => new AppError('SVC_NOT_FOUND', 'Unknown referenceId');
  if (!principal) throw unknown();
  const now = clock(ctx);
  const at = now.toISOString();
  const built: StoredTransaction = {
    ...build(referenceId, at, newTransactionId(referenceId)),
    ...(principal.userId !== undefined ? { userId: principal.userId } : {}),
    referenceId,
    version: 1,
  };
  const changes = creations(built);
  const txn = withFirstTimer(
    ctx.rt,
    ctx.app,
    asCreated(ctx, built),
    now.getTime(),
    reminderDaysBefore,
  );
  const items: TransactItem[] = [
    {
      Update: {
        TableName: ctx.rt.tables.entities,
        Key: keys.principal(ctx.app.appId, referenceId),
        UpdateExpression: 'SET lastActiveAt = :at REMOVE inactivityWarnedAt',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: { ':at': at },
      },
    },
    putTransaction(ctx.rt, txn),
  ];
  try {
    await commit(ctx, txn, changes, items, true, now, { events });
  } catch (err) {
    const c = cancellationReasons(err);
    if (c?.failed.has(0)) throw unknown();
    if (c?.contention) throw busy();
    throw err;
  }
  return txn;
}

export interface Mutation {
  records: ConsentRecord[];
  changes: RecordChange[];
  patch?: Partial<Pick<StoredTransaction, 'userId' | 'reminderSentAt' | 'parental'>>;
  extra?: ExtraWrite[];
  /** Events beyond those the record changes imply (the expiry reminder). */
  events?: (c: EventContext) => ConsentEvent[];
  /** Write even when no record changed (e.g. only the e-mail or the user link changed). */
  force?: boolean;
}

/**
 * Read, apply, write with optimistic locking on `version`; on a lost race re-read and
 * re-apply (the rules run again on the fresh state), a few times, then 503. Returns the
 * transaction after the change (unchanged for a no-op, which writes nothing). A change made by
 * a caller (not by the service's timers) is the principal's activity.
 */
export async function mutateTransaction(
  ctx: WriteContext,
  locate: () => Promise<StoredTransaction | undefined>,
  apply: (txn: StoredTransaction, now: string) => Mutation,
): Promise<{ txn: StoredTransaction; events: ConsentEvent[] }> {
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const current = await locate();
    if (!current) throw new AppError('SVC_NOT_FOUND', 'Unknown transaction');
    const now = clock(ctx);
    const at = now.toISOString();
    const m = apply(current, at);
    assertParentalGate(current, m.changes);
    if (m.changes.length === 0 && !m.force) return { txn: current, events: [] };
    const next = withHistory(
      {
        ...explicit(ctx.rt, current),
        ...m.patch,
        records: m.records,
        updatedAt: at,
        version: current.version + 1,
      },
      m.changes,
      ctx.actor,
      at,
    );
    const extra = m.extra ?? [];
    try {
      const events = await commit(
        ctx,
        next,
        m.changes,
        [putTransaction(ctx.rt, next, current.version), ...extra.map((x) => x.item)],
        false,
        now,
        { events: m.events },
      );
      if (!bySystem(ctx.actor)) noteActivity(ctx.rt, ctx.app, next.referenceId);
      return { txn: next, events };
    } catch (err) {
      const c = cancellationReasons(err);
      if (!c) throw err;
      const hit = extra.findIndex((x, i) => x.conflict !== undefined && c.failed.has(i + 1));
      if (hit >= 0) throw new AppError('SVC_CONFLICT', extra[hit]!.conflict);
      if (c.failed.size > 0 || c.contention) continue;
      throw err;
    }
  }
  throw busy();
}

/**
 * A new transaction's id; given the principal's referenceId it carries it (ids.ts,
 * `transactionUuid`), so the transaction is read by id with no index.
 */
export const newTransactionId = (referenceId?: string) => transactionUuid(Date.now(), referenceId);

/**
 * Ids for the new records of a transaction that already holds `existing`: derived from the
 * transaction id (ids.ts, `recordUuid`), numbered on from the highest one, so a record is found
 * by its id alone. A transaction holds at most `MAX_RECORDS` (45) of the 255 numbers.
 */
export function recordIdsFor(
  transactionId: string,
  existing: readonly { recordId: string }[] = [],
): () => string {
  let n = 0;
  for (const r of existing) n = Math.max(n, recordNumber(transactionId, r.recordId) ?? 0);
  return () => recordUuid(transactionId, ++n);
}
