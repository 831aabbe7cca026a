import { AppError } from '../../errors.js';
import type { ConsentDeps } from './deps.js';
import { newEventId, newReferenceId, recordNumber, recordUuid, transactionUuid } from '../ids.js';
import type { App } from '../types.js';
import { noteActivity } from './activity.js';
import { assertParentalGate } from './apply.js';
import { creationIds, creations, historyOf, withHistory } from './carried.js';
import { planEvents, sequencesAfter, type ConsentEvent, type EventContext } from './events.js';
import type {
  Actor,
  ConsentRecord,
  RecordChange,
  StoredPrincipal,
  StoredTransaction,
} from './model.js';
import type { ExtraWrite, TimerContext } from './store.js';

/**
 * The write paths of the consent domain: validate, apply the change, plan its events, pick the
 * ids, and hand the whole to the consent store (`rt.consents`, store.ts), which writes the change
 * and its events atomically; a lost race is tried again on a fresh read, a few times, then 503.
 */

const MAX_ATTEMPTS = 5;

export interface WriteContext {
  rt: ConsentDeps;
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

type ExtraEvents = ((c: EventContext) => ConsentEvent[]) | undefined;

const busy = () =>
  new AppError('SVC_UNAVAILABLE', 'The consent is being changed concurrently; retry shortly', {
    retryAfterS: 1,
  });

/**
 * The events of a write: those its changes imply (events.ts), then `more`, numbered on from the
 * transaction's last sequence (`last`); `sequence` is the last of them, which the written
 * transaction holds. A creation's ids are derived from the transaction's id (carried.ts), and
 * when its events are just those its records imply (`implied`) the store need not keep them
 * apart from the transaction.
 */
function eventsOf(
  ctx: WriteContext,
  txn: StoredTransaction,
  changes: readonly RecordChange[],
  created: boolean,
  now: Date,
  more: ExtraEvents,
  last: number,
): { events: ConsentEvent[]; implied: boolean; sequence: number } {
  const derivable = created && ctx.reason === undefined;
  const ec: EventContext = {
    app: ctx.app,
    txn,
    changes,
    created,
    now,
    baseUrl: ctx.rt.config.PUBLIC_BASE_URL.replace(/\/+$/, ''),
    newId: derivable ? creationIds(txn) : newEventId,
    nextSequence: sequencesAfter(last),
    reason: ctx.reason,
  };
  const planned = planEvents(ec);
  const extra = more?.(ec) ?? [];
  const events = [...planned, ...extra];
  return { events, implied: derivable && extra.length === 0, sequence: last + events.length };
}

const timersOf = (ctx: WriteContext, now: Date, reminderDaysBefore?: number): TimerContext => ({
  app: ctx.app,
  nowMs: now.getTime(),
  reminderDaysBefore,
});

/**
 * A new transaction as stored, with the write of it: its creation history implied by
 * `createdBy` (carried.ts), the app's environment, which its creation events are rebuilt with,
 * and the sequence of the last of those events (the first is 1).
 */
function asCreated(
  ctx: WriteContext,
  built: Omit<StoredTransaction, 'sequence'>,
  now: Date,
  more: ExtraEvents,
) {
  const t: StoredTransaction = {
    ...built,
    createdBy: ctx.actor,
    environment: ctx.app.environment,
    sequence: 0,
  };
  const changes = creations(t);
  const { sequence, ...written } = eventsOf(ctx, t, changes, true, now, more, 0);
  return { txn: { ...t, sequence }, changes, ...written };
}

export interface NewTransaction {
  /** Everything but the keys, which are assigned here, with the transaction id it is given. */
  build(
    referenceId: string,
    now: string,
    transactionId: string,
  ): Omit<StoredTransaction, 'referenceId' | 'version' | 'sequence'>;
  principal: Pick<StoredPrincipal, 'userId' | 'email'>;
  /** Also claim the user id (record API): a second claim for the user is 409. */
  userId?: string;
  /** The notice's reminder lead time (default 30 days). */
  reminderDaysBefore?: number | undefined;
  /** Events beyond those the new records imply (parental verification required). */
  events?: ExtraEvents;
}

/**
 * Creates a principal and its first transaction. Without a user id the referenceId is random,
 * and a collision (the store refuses the principal or the transaction) is retried with a new one.
 *
 * With a user id (record API) the principal goes to the referenceId the user id derives to
 * (ids.ts, `derivedReferenceId`) and stands for the user's claim itself, holding the user's
 * transaction id. If that referenceId is taken by another principal (another user id derived to
 * it, or a random one), the principal gets a random referenceId and the store writes the user's
 * claim beside it. Either way a second claim of the user id fails: 409. A principal of this user
 * left without its first transaction (a creation cut short) is taken over.
 */
export async function createWithPrincipal(
  ctx: WriteContext,
  o: NewTransaction,
): Promise<StoredTransaction> {
  const { appId } = ctx.app;
  const store = ctx.rt.consents;
  const derivedRef =
    o.userId === undefined ? undefined : await store.derivedReferenceOf(appId, o.userId);
  let useDerived = derivedRef !== undefined;
  /** This user's principal whose first transaction never landed: taken over. */
  let adopt: string | undefined;
  const taken = () =>
    new AppError('SVC_CONFLICT', 'This user already has a consent record; use PUT');
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const now = clock(ctx);
    const at = now.toISOString();
    const referenceId = useDerived ? derivedRef! : newReferenceId();
    // `adopt` is set only with `useDerived` (`derivedTaken`).
    const transactionId = adopt ?? newTransactionId(referenceId);
    const created = asCreated(
      ctx,
      { ...o.build(referenceId, at, transactionId), referenceId, version: 1 },
      now,
      o.events,
    );
    const outcome = await store.createFirst({
      ...created,
      timers: timersOf(ctx, now, o.reminderDaysBefore),
      signal: ctx.signal,
      principal: {
        appId,
        referenceId,
        ...o.principal,
        ...(useDerived ? { userTransactionId: transactionId } : {}),
        createdAt: at,
        updatedAt: at,
        lastActiveAt: at,
      },
      ...(adopt ? { takeOver: { userId: o.userId!, transactionId: adopt } } : {}),
      ...(o.userId !== undefined ? { user: { userId: o.userId, derivedRef: derivedRef! } } : {}),
    });
    if ('ok' in outcome) return outcome.ok;
    if ('contention' in outcome) continue;
    if (outcome.refused === 'user') throw taken();
    // The transaction exists: this user's, written by the request that left the principal
    // behind (or by another taking it over).
    if (outcome.refused === 'transaction' && useDerived) throw taken();
    if (outcome.refused === 'principal' && useDerived) {
      const next = await derivedTaken(ctx, o.userId!, referenceId);
      if (next === 'taken') throw taken();
      adopt = next.adopt;
      useDerived = next.derived;
    }
  }
  throw busy();
}

/**
 * The derived referenceId is taken: by this user (its principal, or its claim: 409; or its
 * principal left without its transaction: taken over), by someone else (a random referenceId
 * next), or by nobody any more (the same again).
 */
async function derivedTaken(
  ctx: WriteContext,
  userId: string,
  referenceId: string,
): Promise<'taken' | { adopt?: string; derived: boolean }> {
  const holder = await ctx.rt.consents.loadPrincipalKey(ctx.app.appId, referenceId);
  if (!holder) return { derived: true };
  if (holder.userId !== userId) return { derived: false };
  const adopt = await orphanedFirst(ctx, holder);
  return adopt === undefined ? 'taken' : { adopt, derived: true };
}

/**
 * The transaction id of this user's principal when that transaction does not exist (a creation
 * cut short between the store's two puts), to be taken over; undefined when the user has its
 * consent record (or holds the referenceId by a claim).
 */
async function orphanedFirst(
  ctx: WriteContext,
  holder: { referenceId: string; userTransactionId?: string; claimOf?: string },
): Promise<string | undefined> {
  if (holder.claimOf !== undefined || holder.userTransactionId === undefined) return undefined;
  const t = await ctx.rt.consents.loadTransactionAt(
    ctx.app.appId,
    holder.referenceId,
    holder.userTransactionId,
  );
  return t ? undefined : holder.userTransactionId;
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
  const store = ctx.rt.consents;
  const principal = await store.loadPrincipal(ctx.app.appId, referenceId);
  const unknown = () => new AppError('SVC_NOT_FOUND', 'Unknown referenceId');
  if (!principal) throw unknown();
  const now = clock(ctx);
  const at = now.toISOString();
  const created = asCreated(
    ctx,
    {
      ...build(referenceId, at, newTransactionId(referenceId)),
      ...(principal.userId !== undefined ? { userId: principal.userId } : {}),
      referenceId,
      version: 1,
    },
    now,
    events,
  );
  const outcome = await store.addTransaction({
    ...created,
    timers: timersOf(ctx, now, reminderDaysBefore),
    signal: ctx.signal,
  });
  if (outcome === 'no-principal') throw unknown();
  if (outcome === 'contention') throw busy();
  return created.txn;
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
 * a caller (not by the service's timers) is the principal's activity. The change writes out the
 * history its transaction left implied (carried.ts, `historyOf`).
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
    const changed = withHistory(
      {
        ...current,
        history: historyOf(current),
        ...m.patch,
        records: m.records,
        updatedAt: at,
        version: current.version + 1,
      },
      m.changes,
      ctx.actor,
      at,
    );
    const extras = m.extra ?? [];
    // Numbered on from the sequence read with `current`: the version condition of the write
    // makes it the stored one, or the change is tried again on a fresh read.
    const { events, sequence } = eventsOf(
      ctx,
      changed,
      m.changes,
      false,
      now,
      m.events,
      current.sequence,
    );
    const next = { ...changed, sequence };
    const outcome = await ctx.rt.consents.change({
      current,
      next,
      changes: m.changes,
      extras,
      events,
      timers: timersOf(ctx, now),
      signal: ctx.signal,
    });
    if (outcome === 'stale' || outcome === 'contention') continue;
    if (outcome !== 'ok') throw new AppError('SVC_CONFLICT', extras[outcome.conflict]!.conflict);
    if (!bySystem(ctx.actor)) noteActivity(ctx.rt, ctx.app, next.referenceId);
    return { txn: next, events };
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
