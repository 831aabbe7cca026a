import {
  DeleteCommand,
  GetCommand,
  PutCommand,
  ScanCommand,
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import type { TableNames } from '../../../infra/definitions/tables.js';
import {
  withFullRecords,
  type StoredPrincipal,
  type StoredTransaction,
} from '../../domain/consent/model.js';
import type {
  ActivityFields,
  ActivityStore,
  ErasureRead,
  ErasureStore,
  ExpiryStore,
  InactivityStore,
  ScannedPrincipal,
  ScrubHoldings,
  ScrubMark,
  ScrubStore,
  SeenActivity,
  SweepStores,
  TimerOrder,
} from '../../domain/consent/sweep-ports.js';
import { cancellationReasons, isConditionFailure, updateIfHolds } from '../dynamo.js';
import { ATTR } from '../outbox/commits.js';
import { STREAM_WRITER_ATTR } from '../outbox/carrier-stream.js';
import { queryAll, queryPages } from '../query.js';
import { isClaim, keys } from './repository.js';
import { expiryEntry } from './timers.js';
import { ensureFamily } from '../timers/due.js';

/**
 * The consent sweeps' ports (domain/consent/sweep-ports.ts) on the `entities` and `timers`
 * tables, in the layout of repository.ts. The reads of principals and transactions by key are
 * the repository's, passed in as `consents`.
 */

export interface SweepStoreDeps {
  dynamo: { doc: DynamoDBDocumentClient };
  tables: TableNames;
  config: { TIMER_SHARDS: number };
  consents: {
    loadPrincipal(appId: string, referenceId: string): Promise<StoredPrincipal | undefined>;
    loadTransaction(appId: string, transactionId: string): Promise<StoredTransaction | undefined>;
    derivedReferenceOf(appId: string, userId: string): Promise<string>;
  };
}

type Item = Record<string, unknown>;

/** A consent timer as the timers table stores it: its due-index entry (shared/storage/timers/due.ts). */
const timerPut = (deps: SweepStoreDeps, t: TimerOrder) => ({
  Put: {
    TableName: deps.tables.timers,
    Item: { ...expiryEntry(t.kind, t, t.dueAtMs, deps.config.TIMER_SHARDS) },
  },
});

async function putTimer(deps: SweepStoreDeps, entry: TimerOrder): Promise<void> {
  await deps.dynamo.doc.send(new PutCommand(timerPut(deps, entry).Put));
}

export function activityStore(deps: SweepStoreDeps): ActivityStore {
  const { doc } = deps.dynamo;
  return {
    async readActivity(appId, referenceId) {
      const r = await doc.send(
        new GetCommand({
          TableName: deps.tables.entities,
          Key: keys.principal(appId, referenceId),
          ProjectionExpression: 'lastActiveAt, inactivityWarnedAt, createdAt, updatedAt, claimOf',
        }),
      );
      // A user's claim at a principal's key is no principal (repository.ts, `putClaim`).
      return !r.Item || isClaim(r.Item) ? undefined : (r.Item as ActivityFields);
    },
    touchActivity: (appId, referenceId, at, floor) =>
      updateIfHolds(doc, {
        TableName: deps.tables.entities,
        Key: keys.principal(appId, referenceId),
        UpdateExpression: 'SET lastActiveAt = :at REMOVE inactivityWarnedAt',
        ConditionExpression:
          'attribute_exists(pk) AND (attribute_exists(inactivityWarnedAt) OR attribute_not_exists(lastActiveAt) OR lastActiveAt < :floor)',
        ExpressionAttributeValues: { ':at': at, ':floor': floor },
      }),
  };
}

export function erasureStore(deps: SweepStoreDeps): ErasureStore {
  const { doc } = deps.dynamo;
  return {
    async *transactionPages(appId, referenceId) {
      const pages = queryPages(doc, {
        TableName: deps.tables.entities,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :txn)',
        ExpressionAttributeValues: {
          ':pk': keys.principal(appId, referenceId).pk,
          ':txn': 'TXN#',
        },
        ExpressionAttributeNames: { '#r': 'records' },
        ProjectionExpression: 'transactionId, createdAt, updatedAt, #r',
        ConsistentRead: true,
      });
      for await (const items of pages) yield (items as ErasureRead[]).map(withFullRecords);
    },
    markErased: (appId, referenceId, at) =>
      updateIfHolds(doc, {
        TableName: deps.tables.entities,
        Key: keys.principal(appId, referenceId),
        UpdateExpression: 'SET erasedAt = :at',
        ConditionExpression:
          'attribute_exists(pk) AND (attribute_not_exists(erasedAt) OR erasedAt < :at)',
        ExpressionAttributeValues: { ':at': at },
      }),
  };
}

export function expiryStore(deps: SweepStoreDeps): ExpiryStore {
  return {
    loadTransaction: (appId, transactionId) => deps.consents.loadTransaction(appId, transactionId),
    putTimer: (entry) => putTimer(deps, entry),
  };
}

/** The condition that the principal's activity fields are still those read (`seen`). */
function unchanged(p: SeenActivity) {
  const values: Record<string, string> = {};
  const parts = ['attribute_exists(pk)'];
  if (p.lastActiveAt === undefined) parts.push('attribute_not_exists(lastActiveAt)');
  else {
    parts.push('lastActiveAt = :seenActive');
    values[':seenActive'] = p.lastActiveAt;
  }
  if (p.inactivityWarnedAt === undefined) parts.push('attribute_not_exists(inactivityWarnedAt)');
  else {
    parts.push('inactivityWarnedAt = :seenWarned');
    values[':seenWarned'] = p.inactivityWarnedAt;
  }
  return { ConditionExpression: parts.join(' AND '), values };
}

/** Principals read per scan page. */
const SCAN_PAGE = 500;

export function inactivityStore(deps: SweepStoreDeps): InactivityStore {
  const { doc } = deps.dynamo;
  return {
    ensureTimers: (nowMs) => ensureFamily(deps, 'expiry', deps.config.TIMER_SHARDS, nowMs),
    loadPrincipal: (appId, referenceId) => deps.consents.loadPrincipal(appId, referenceId),
    putTimer: (entry) => putTimer(deps, entry),
    async markWarned(appId, referenceId, seen, at, timer) {
      const cond = unchanged(seen);
      try {
        await doc.send(
          new TransactWriteCommand({
            TransactItems: [
              {
                Update: {
                  TableName: deps.tables.entities,
                  Key: keys.principal(appId, referenceId),
                  UpdateExpression: 'SET inactivityWarnedAt = :now',
                  ConditionExpression: cond.ConditionExpression,
                  ExpressionAttributeValues: { ...cond.values, ':now': at },
                },
              },
              timerPut(deps, timer),
            ],
          }),
        );
        return true;
      } catch (err) {
        if (cancellationReasons(err)?.failed.has(0)) return false;
        throw err;
      }
    },
    async *principalPages(appId) {
      let start: Record<string, unknown> | undefined;
      do {
        const page = await doc.send(
          new ScanCommand({
            TableName: deps.tables.entities,
            // Claims at a principal's key are no principals (repository.ts, `putClaim`).
            FilterExpression: 'sk = :sk AND appId = :app AND attribute_not_exists(claimOf)',
            ExpressionAttributeValues: { ':sk': 'PRINCIPAL', ':app': appId },
            ProjectionExpression:
              'appId, referenceId, lastActiveAt, inactivityWarnedAt, createdAt, updatedAt',
            Limit: SCAN_PAGE,
            ExclusiveStartKey: start,
          }),
        );
        yield (page.Items ?? []) as ScannedPrincipal[];
        start = page.LastEvaluatedKey;
      } while (start);
    },
  };
}

/** What a transaction item holds of the commit that created it (outbox.ts, `commit`'s carrier). */
const CARRIED = [ATTR.packed, STREAM_WRITER_ATTR, ATTR.at].join(', ');

/** `SET` parts and values for the scrub mark. */
function markParts(mark: ScrubMark) {
  const sets = ['scrubbedAt = :at'];
  const values: Item = { ':at': mark.at };
  if (mark.userIdHash !== undefined) {
    sets.push('userIdHash = :h');
    values[':h'] = mark.userIdHash;
  }
  return { sets, values };
}

export function scrubStore(deps: SweepStoreDeps): ScrubStore {
  const { doc } = deps.dynamo;
  const table = deps.tables.entities;
  return {
    async loadHoldings(appId, referenceId) {
      const items = await queryAll(doc, {
        TableName: table,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': keys.principal(appId, referenceId).pk },
        ConsistentRead: true,
      });
      const principal = items.find((i) => i.sk === 'PRINCIPAL');
      if (!principal) return undefined;
      const transactions = (
        items.filter((i) => String(i.sk).startsWith('TXN#')) as ScrubHoldings['transactions']
      ).map(withFullRecords);
      return { principal: principal as ScrubHoldings['principal'], transactions };
    },
    derivedReferenceOf: (appId, userId) => deps.consents.derivedReferenceOf(appId, userId),
    async deleteUserPointer(appId, userId, referenceId) {
      try {
        await doc.send(
          new DeleteCommand({
            TableName: table,
            Key: keys.user(appId, userId),
            ConditionExpression: 'referenceId = :ref',
            ExpressionAttributeValues: { ':ref': referenceId },
          }),
        );
        return true;
      } catch (err) {
        if (!isConditionFailure(err)) throw err;
        return false;
      }
    },
    scrubClaim: (appId, claimRef, claim, mark) =>
      updateIfHolds(doc, {
        TableName: table,
        Key: keys.principal(appId, claimRef),
        UpdateExpression: 'SET scrubbedAt = :at, userIdHash = :h REMOVE userId',
        ConditionExpression: 'claimOf = :ref AND userId = :u',
        ExpressionAttributeValues: {
          ':at': mark.at,
          ':h': mark.userIdHash,
          ':ref': claim.referenceId,
          ':u': claim.userId,
        },
      }),
    async scrubPrincipal(appId, referenceId, mark) {
      const { sets, values } = markParts(mark);
      await doc.send(
        new UpdateCommand({
          TableName: table,
          Key: keys.principal(appId, referenceId),
          UpdateExpression: `SET ${sets.join(', ')} REMOVE userId, email`,
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeValues: values,
        }),
      );
    },
    async scrubTransaction(t, mark) {
      const { sets, values } = markParts(mark);
      // A concurrent writer holding the old version must re-read (and find no user id).
      sets.push('#v = :next');
      values[':next'] = Number(t.version) + 1;
      values[':v'] = Number(t.version);
      await doc.send(
        new UpdateCommand({
          TableName: table,
          Key: keys.transaction(t.appId, t.referenceId, t.transactionId),
          // The events it carried since its creation (outbox.ts, carrier) name the user.
          UpdateExpression: `SET ${sets.join(', ')} REMOVE userId, email, ${CARRIED}`,
          ConditionExpression: 'attribute_exists(pk) AND #v = :v',
          ExpressionAttributeNames: { '#v': 'version' },
          ExpressionAttributeValues: values,
        }),
      );
    },
  };
}

/** The five stores over one set of deps. */
export function sweepStores(deps: SweepStoreDeps): SweepStores {
  return {
    activity: activityStore(deps),
    erasure: erasureStore(deps),
    expiry: expiryStore(deps),
    inactivity: inactivityStore(deps),
    scrub: scrubStore(deps),
  };
}
