import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { TableNames } from '../../../infra/definitions/tables.js';
import { AppError } from '../../errors.js';
import type { Logger } from '../../logger.js';
import { derivedReferenceId } from '../../domain/ids.js';
import type { RecordChange, StoredTransaction } from '../../domain/consent/model.js';
import type {
  ChangeOutcome,
  ChangeWrite,
  ConsentStore,
  CreateOutcome,
  FirstWrite,
  NewTransactionWrite,
  PrincipalWrite,
} from '../../domain/consent/store.js';
import { cancellationReasons, writeItems } from '../dynamo.js';
import { ownCancellation, type TransactItem } from '../group-commit.js';
import { certainlyNotApplied, type Outbox } from '../outbox/outbox.js';
import { packCreation, toOutboxItem } from './carried.js';
import {
  allTransactionIds,
  findUserAt,
  keys,
  loadPrincipal,
  loadPrincipalKey,
  loadRecordPointer,
  loadTransaction,
  loadTransactionAt,
  notDerivedUser,
  putClaim,
  putPrincipal,
  putTransaction,
  putUser,
  queryTransactions,
} from './repository.js';
import { timerItems, withFirstTimer } from './timers.js';

export interface ConsentStoreDeps {
  dynamo: { doc: DynamoDBDocumentClient };
  tables: Pick<TableNames, 'entities' | 'timers'>;
  config: { TIMER_SHARDS: number; PUBLIC_BASE_URL: string };
  topics: { consentEvents: string };
  log: Logger;
  outbox: Pick<Outbox, 'commit' | 'group'>;
  /** The app's reference key (shared/domain/apps.ts): user ids derive referenceIds with it. */
  referenceKey(appId: string): Promise<Buffer>;
  /** Makes sure the `expiry` timer family's watermarks exist before a timer is written. */
  ensureTimers(nowMs: number): Promise<void>;
}

/** What one commit writes beyond its items: its events, and how they may be stored. */
type Commit = Pick<NewTransactionWrite, 'events' | 'implied' | 'timers' | 'signal'>;

/**
 * The consent store on DynamoDB (repository.ts has the layout). Each write is ONE outbox commit:
 * the transaction item (with its history), the principal's or user's items, the timers and the
 * events, so a failure leaves nothing half-written and no event without its change. One
 * exception: a new principal and its first transaction, when they are all there is, are two
 * conditional puts (`split`), and a failure between the two leaves a principal with no
 * transaction, no consent and no event. A refused transaction's reasons come by item index;
 * they are mapped to the outcomes of the port (shared/domain/consent/store.ts) here.
 */
export class DynamoConsentStore implements ConsentStore {
  constructor(private readonly d: ConsentStoreDeps) {}

  loadPrincipal(appId: string, referenceId: string) {
    return loadPrincipal(this.d, appId, referenceId);
  }

  loadPrincipalKey(appId: string, referenceId: string) {
    return loadPrincipalKey(this.d, appId, referenceId);
  }

  async derivedReferenceOf(appId: string, userId: string) {
    return derivedReferenceId(await this.d.referenceKey(appId), userId);
  }

  async findUser(appId: string, userId: string) {
    return findUserAt(this.d, appId, userId, await this.derivedReferenceOf(appId, userId));
  }

  loadTransaction(appId: string, transactionId: string) {
    return loadTransaction(this.d, appId, transactionId);
  }

  loadTransactionAt(appId: string, referenceId: string, transactionId: string) {
    return loadTransactionAt(this.d, appId, referenceId, transactionId);
  }

  loadRecordPointer(appId: string, recordId: string) {
    return loadRecordPointer(this.d, appId, recordId);
  }

  listTransactions(appId: string, referenceId: string, limit: number, cursor?: string) {
    return queryTransactions(this.d, appId, referenceId, limit, cursor);
  }

  allTransactionIds(appId: string, referenceId: string) {
    return allTransactionIds(this.d, appId, referenceId);
  }

  /**
   * The principal, its first transaction and, with a user away from its derived referenceId,
   * the user's pointer item and the check that the derived principal is not the user's. When
   * principal and transaction are all it writes, they go as two conditional puts (`split`);
   * otherwise, or when it takes over a principal left without its transaction, in one
   * transaction. Refusals come by index either way: 0 the principal, 1 the transaction, 2 and 3
   * the user's items.
   */
  async createFirst(w: FirstWrite): Promise<CreateOutcome> {
    const txn = this.withTimer(w);
    const principal = putPrincipal(this.d, w.principal);
    if (w.takeOver) {
      const put = principal.Put!;
      put.ConditionExpression = 'userId = :u AND userTransactionId = :t';
      put.ExpressionAttributeValues = { ':u': w.takeOver.userId, ':t': w.takeOver.transactionId };
    }
    const claims = w.user ? this.userClaimItems(txn, w.user) : [];
    try {
      if (claims.length === 0 && !w.takeOver) await this.split(txn, w.changes, principal, w);
      else
        await this.commit(
          txn,
          w.changes,
          [principal, putTransaction(this.d, txn), ...claims],
          true,
          w,
        );
      return { ok: txn };
    } catch (err) {
      const c = cancellationReasons(err);
      if (!c) throw err;
      if (c.failed.has(2) || c.failed.has(3)) return { refused: 'user' };
      if (c.failed.has(1)) return { refused: 'transaction' };
      if (c.failed.has(0)) return { refused: 'principal' };
      if (c.contention) return { contention: true };
      throw err;
    }
  }

  /** The transaction with the principal's activity; refused at index 0: no principal. */
  async addTransaction(w: NewTransactionWrite): Promise<'ok' | 'no-principal' | 'contention'> {
    const txn = this.withTimer(w);
    const items: TransactItem[] = [
      {
        Update: {
          TableName: this.d.tables.entities,
          Key: keys.principal(txn.appId, txn.referenceId),
          UpdateExpression: 'SET lastActiveAt = :at REMOVE inactivityWarnedAt',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeValues: { ':at': txn.createdAt },
        },
      },
      putTransaction(this.d, txn),
    ];
    try {
      await this.commit(txn, w.changes, items, true, w);
      return 'ok';
    } catch (err) {
      const c = cancellationReasons(err);
      if (c?.failed.has(0)) return 'no-principal';
      if (c?.contention) return 'contention';
      throw err;
    }
  }

  /**
   * The whole transaction item, conditional on the version (and the derived timer) it was
   * loaded with, and the extras at index 1 on. While the loaded item carries its creation
   * events only as derivable, they are packed into the new one (carried.ts).
   */
  async change(w: ChangeWrite): Promise<ChangeOutcome> {
    const next: StoredTransaction = {
      ...w.next,
      ...packCreation(w.current, {
        topic: this.d.topics.consentEvents,
        baseUrl: this.d.config.PUBLIC_BASE_URL,
      }),
    };
    const extras = w.extras ?? [];
    const items = [
      putTransaction(this.d, next, w.current.version),
      ...extras.map((x) => this.extraItem(next.appId, x.write)),
    ];
    try {
      await this.commit(next, w.changes, items, false, w);
      return 'ok';
    } catch (err) {
      const c = cancellationReasons(err);
      if (!c) throw err;
      const hit = extras.findIndex((x, i) => x.conflict !== undefined && c.failed.has(i + 1));
      if (hit >= 0) return { conflict: hit };
      if (c.failed.size > 0) return 'stale';
      if (c.contention) return 'contention';
      throw err;
    }
  }

  /** A new transaction carrying its first timer (timers.ts, `withFirstTimer`). */
  private withTimer(w: NewTransactionWrite): StoredTransaction {
    const t = w.timers;
    return withFirstTimer(this.d, t.app, w.txn, t.nowMs, t.reminderDaysBefore);
  }

  private async commit(
    txn: StoredTransaction,
    changes: readonly RecordChange[],
    items: TransactItem[],
    created: boolean,
    w: Commit,
    alone = false,
  ): Promise<void> {
    const { nowMs } = w.timers;
    const timers = timerItems(this.d, w.timers.app, txn, { created, changes, nowMs });
    // The transaction item may carry a due entry itself (its first timer, `withFirstTimer`).
    if (timers.length > 0 || txn.duesk !== undefined) await this.d.ensureTimers(nowMs);
    const all = [...items, ...timers];
    if (all.length + w.events.length > 100)
      throw new AppError('SVC_VALIDATION_FAILED', 'Too many purposes in one change', {
        errors: [{ path: '/consents', message: 'too many purposes for one change' }],
      });
    // A new transaction's item carries its own events: no outbox item for the commonest write.
    // When they are those its records imply, it holds only the relay's keys, and the relay
    // rebuilds the events from the item (carried.ts).
    const carrier = created
      ? all.findIndex((i) => i.Put?.Item?.sk === keys.transaction('', '', txn.transactionId).sk)
      : -1;
    // With the signal aborted (nobody waits for the outcome), the group commit refuses the
    // write unsent: SVC_UNAVAILABLE, nothing applied.
    await this.d.outbox.commit(
      all,
      w.events.map((e) => toOutboxItem(e, this.d.topics.consentEvents)),
      {
        ...(carrier >= 0 ? { carrier } : {}),
        derived: carrier >= 0 && w.implied === true,
        signal: w.signal,
        alone,
      },
    );
  }

  /**
   * A new principal and its first transaction as two conditional puts, each billed once (in one
   * transaction each is billed twice): the principal first, which claims the referenceId (and
   * at a user's derived referenceId, the user), then the transaction with its events. Refusals
   * come as the transaction's would: index 0 the principal, 1 the transaction. Nothing reads a
   * principal without its transaction as a consent: a process that dies between the two leaves
   * a principal with no transaction, which holds no consent and sends no event. Such a
   * principal is removed at once when the transaction was certainly not written; otherwise the
   * user's next creation takes it over (writer.ts, `orphanedFirst`), and at a random
   * referenceId (a widget capture, which gives the principal no e-mail and no user id) nobody
   * ever learns of it.
   */
  private async split(
    txn: StoredTransaction,
    changes: readonly RecordChange[],
    principal: TransactItem,
    w: Commit,
  ): Promise<void> {
    const item = principal.Put!.Item!;
    await this.d.outbox.group.single(
      principal,
      w.signal,
      (stored) =>
        stored.createdAt === item.createdAt &&
        stored.userTransactionId === item.userTransactionId &&
        stored.email === item.email,
    );
    try {
      await this.commit(txn, changes, [putTransaction(this.d, txn)], true, w, true);
    } catch (err) {
      // The transaction's refusal as the combined write's: its reason at index 1.
      const c = cancellationReasons(err);
      if (c)
        throw ownCancellation(err, [
          { Code: 'None' },
          { Code: c.failed.has(0) ? 'ConditionalCheckFailed' : 'None' },
        ]);
      if (certainlyNotApplied(err)) await this.dropPrincipal(principal);
      throw err;
    }
  }

  /** Removes the principal `split` wrote when its transaction was certainly not written. */
  private async dropPrincipal(principal: TransactItem): Promise<void> {
    const item = principal.Put!.Item! as Record<string, string>;
    try {
      await writeItems(this.d.dynamo.doc, [
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
      this.d.log.warn(
        { err, referenceId: item.referenceId },
        'a principal whose first transaction failed was not removed; the user’s next creation takes it over',
      );
    }
  }

  /**
   * What claims a new user beside its principal and transaction: nothing at its derived
   * referenceId, where the principal is the claim; elsewhere a pointer item, and a check that
   * the derived principal is not this user's.
   */
  private userClaimItems(
    txn: StoredTransaction,
    u: { userId: string; derivedRef: string },
  ): TransactItem[] {
    if (txn.referenceId === u.derivedRef) return [];
    return [
      putUser(this.d, {
        appId: txn.appId,
        userId: u.userId,
        referenceId: txn.referenceId,
        transactionId: txn.transactionId,
        createdAt: txn.createdAt,
      }),
      notDerivedUser(this.d, txn.appId, u.derivedRef, u.userId),
    ];
  }

  /** A principal's or user's write of a change's commit, as an item. */
  private extraItem(appId: string, w: PrincipalWrite): TransactItem {
    const TableName = this.d.tables.entities;
    switch (w.op) {
      case 'link-user':
        return {
          Update: {
            TableName,
            Key: keys.principal(appId, w.referenceId),
            UpdateExpression: 'SET userId = :u, email = :e, updatedAt = :now',
            ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(userId)',
            ExpressionAttributeValues: { ':u': w.userId, ':e': w.email, ':now': w.at },
          },
        };
      case 'set-email':
        return {
          Update: {
            TableName,
            Key: keys.principal(appId, w.referenceId),
            UpdateExpression: 'SET email = :e, updatedAt = :now',
            ConditionExpression: 'attribute_exists(pk)',
            ExpressionAttributeValues: { ':e': w.email, ':now': w.at },
          },
        };
      case 'mark-erased':
        return {
          Update: {
            TableName,
            Key: keys.principal(appId, w.referenceId),
            UpdateExpression: 'SET erasedAt = :at',
            ConditionExpression: 'attribute_exists(pk)',
            ExpressionAttributeValues: { ':at': w.at },
          },
        };
      case 'principal-unchanged':
        return { ConditionCheck: { TableName, ...principalUnchanged(appId, w) } };
      case 'claim-user':
        return putClaim(this.d, w.derivedRef, w.user);
      case 'point-user':
        return putUser(this.d, w.user);
      case 'not-derived-user':
        return notDerivedUser(this.d, appId, w.derivedRef, w.userId);
    }
  }
}

/** The principal exists, its `lastActiveAt` and `inactivityWarnedAt` as they were seen. */
function principalUnchanged(
  appId: string,
  w: Extract<PrincipalWrite, { op: 'principal-unchanged' }>,
) {
  const values: Record<string, string> = {};
  const parts = ['attribute_exists(pk)'];
  if (w.lastActiveAt === undefined) parts.push('attribute_not_exists(lastActiveAt)');
  else {
    parts.push('lastActiveAt = :seenActive');
    values[':seenActive'] = w.lastActiveAt;
  }
  if (w.inactivityWarnedAt === undefined) parts.push('attribute_not_exists(inactivityWarnedAt)');
  else {
    parts.push('inactivityWarnedAt = :seenWarned');
    values[':seenWarned'] = w.inactivityWarnedAt;
  }
  return {
    Key: keys.principal(appId, w.referenceId),
    ConditionExpression: parts.join(' AND '),
    ExpressionAttributeValues: values,
  };
}
