import { GetCommand, PutCommand, QueryCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import type { LedgerDeps } from './deps.js';
import { queryPages, type QueryInput } from '../query.js';
import { CHANGE_SHARDS, parseChangeKey, type Change } from './changes.js';
import { latestOverlapping, type Checkpoint, type Leaf } from '../../domain/ledger/checkpoints.js';
import { dispatchIdOf } from './packed.js';
import { readAppDispatches } from './app-pages.js';

/**
 * Where checkpoints live (the `checkpoints` table), and the two ledger reads the sealer needs.
 *
 *   CHAIN#{appId}          SEQ#{seq}             a signed checkpoint (the app's chain, in order)
 *   PERIODS#{appId}        {periodStart}         the latest checkpoint of a period: seq, root
 *   LEAVES#{appId}#{start} {root}#{page}         the Merkle leaves of a sealed period
 *   APPS                   {appId}               apps with a chain (each is sealed every period)
 *   STATE                  SCAN                  how far the change index has been read
 *
 * Only the signed checkpoints are evidence. Pointers, leaves and the scan mark are
 * bookkeeping: whoever alters them can make the sealer refuse to seal or a verification fail,
 * never make a tampered ledger verify (verify.ts checks leaves against signed roots, and
 * versions of a period against the chain).
 */

export interface PeriodPointer {
  appId: string;
  periodStart: string;
  periodEnd: string;
  seq: number;
  version: number;
  root: string;
}

/** Leaves per stored page: about 130 bytes each, well under DynamoDB's 400 KB item limit. */
const PAGE = 2000;

const chainPk = (appId: string) => `CHAIN#${appId}`;
const seqSk = (seq: number) => `SEQ#${String(seq).padStart(12, '0')}`;
const periodsPk = (appId: string) => `PERIODS#${appId}`;
const leavesPk = (appId: string, periodStart: string) => `LEAVES#${appId}#${periodStart}`;

const STORAGE = new Set(['pk', 'sk']);
const strip = (i: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(i).filter(([k]) => !STORAGE.has(k)));

async function queryAll(
  db: LedgerDeps,
  input: QueryInput,
  stop?: (item: Record<string, unknown>) => boolean,
): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = [];
  for await (const items of queryPages(db.dynamo.doc, input)) {
    for (const i of items) {
      if (stop?.(i)) return out;
      out.push(i);
    }
  }
  return out;
}

/** The app's newest checkpoint (strongly consistent). */
export async function chainHead(db: LedgerDeps, appId: string): Promise<Checkpoint | undefined> {
  const r = await db.dynamo.doc.send(
    new QueryCommand({
      TableName: db.tables.checkpoints,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': chainPk(appId) },
      ScanIndexForward: false,
      Limit: 1,
      ConsistentRead: true,
    }),
  );
  const item = r.Items?.[0];
  return item ? (strip(item) as unknown as Checkpoint) : undefined;
}

/** The app's checkpoints from `fromSeq` on, in order. */
export async function readChain(
  db: LedgerDeps,
  appId: string,
  fromSeq: number,
): Promise<Checkpoint[]> {
  const items = await queryAll(db, {
    TableName: db.tables.checkpoints,
    KeyConditionExpression: 'pk = :pk AND sk >= :from',
    ExpressionAttributeValues: { ':pk': chainPk(appId), ':from': seqSk(Math.max(1, fromSeq)) },
    ConsistentRead: true,
  });
  return items.map((i) => strip(i) as unknown as Checkpoint);
}

export async function getCheckpoint(
  db: LedgerDeps,
  appId: string,
  seq: number,
): Promise<Checkpoint | undefined> {
  const r = await db.dynamo.doc.send(
    new GetCommand({
      TableName: db.tables.checkpoints,
      Key: { pk: chainPk(appId), sk: seqSk(seq) },
      ConsistentRead: true,
    }),
  );
  return r.Item ? (strip(r.Item) as unknown as Checkpoint) : undefined;
}

/** The sealed period starting at or before `at` that starts latest (it may end before `at`). */
export async function pointerAt(
  db: LedgerDeps,
  appId: string,
  at: string,
): Promise<PeriodPointer | undefined> {
  const r = await db.dynamo.doc.send(
    new QueryCommand({
      TableName: db.tables.checkpoints,
      KeyConditionExpression: 'pk = :pk AND sk <= :at',
      ExpressionAttributeValues: { ':pk': periodsPk(appId), ':at': at },
      ScanIndexForward: false,
      Limit: 1,
      ConsistentRead: true,
    }),
  );
  const item = r.Items?.[0];
  return item ? (strip(item) as unknown as PeriodPointer) : undefined;
}

/** Sealed periods overlapping [from, to), newest first. Periods never overlap each other. */
export async function pointersOverlapping(
  db: LedgerDeps,
  appId: string,
  from: string,
  to: string,
): Promise<PeriodPointer[]> {
  const items = await queryAll(
    db,
    {
      TableName: db.tables.checkpoints,
      KeyConditionExpression: 'pk = :pk AND sk < :to',
      ExpressionAttributeValues: { ':pk': periodsPk(appId), ':to': to },
      ScanIndexForward: false,
      ConsistentRead: true,
    },
    (i) => String(i.periodEnd) <= from,
  );
  return items.map((i) => strip(i) as unknown as PeriodPointer);
}

export async function readLeaves(
  db: LedgerDeps,
  appId: string,
  periodStart: string,
  root: string,
): Promise<Leaf[]> {
  const pages = await queryAll(db, {
    TableName: db.tables.checkpoints,
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :root)',
    ExpressionAttributeValues: { ':pk': leavesPk(appId, periodStart), ':root': `${root}#` },
    ConsistentRead: true,
  });
  return pages.flatMap((p) =>
    (JSON.parse(String(p.leaves)) as [string, string, string][]).map(
      ([dispatchId, createdAt, headHash]) => ({ dispatchId, createdAt, headHash }),
    ),
  );
}

export type WriteResult = 'written' | 'conflict';

/**
 * Stores a checkpoint: its leaf pages first (named by the root, so a copy racing with the same
 * content writes the same pages), then in one transaction the checkpoint (only if its seq is
 * free), the period's pointer and, for the app's first checkpoint, its registration.
 * `conflict`: another sealer took this seq first.
 */
export async function writeCheckpoint(
  db: LedgerDeps,
  cp: Checkpoint,
  leaves: readonly Leaf[],
): Promise<WriteResult> {
  const T = db.tables.checkpoints;
  for (let i = 0, page = 0; i < leaves.length; i += PAGE, page++) {
    const chunk = leaves.slice(i, i + PAGE).map((l) => [l.dispatchId, l.createdAt, l.headHash]);
    await db.dynamo.doc.send(
      new PutCommand({
        TableName: T,
        Item: {
          pk: leavesPk(cp.appId, cp.periodStart),
          sk: `${cp.root}#${String(page).padStart(5, '0')}`,
          leaves: JSON.stringify(chunk),
        },
      }),
    );
  }
  const pointer: PeriodPointer = {
    appId: cp.appId,
    periodStart: cp.periodStart,
    periodEnd: cp.periodEnd,
    seq: cp.seq,
    version: cp.version,
    root: cp.root,
  };
  try {
    await db.dynamo.doc.send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Put: {
              TableName: T,
              Item: { ...cp, pk: chainPk(cp.appId), sk: seqSk(cp.seq) },
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          },
          {
            Put: {
              TableName: T,
              Item: { ...pointer, pk: periodsPk(cp.appId), sk: cp.periodStart },
              ConditionExpression: 'attribute_not_exists(pk) OR #seq < :seq',
              ExpressionAttributeNames: { '#seq': 'seq' },
              ExpressionAttributeValues: { ':seq': cp.seq },
            },
          },
          ...(cp.seq === 1
            ? [{ Put: { TableName: T, Item: { pk: 'APPS', sk: cp.appId, since: cp.sealedAt } } }]
            : []),
        ],
      }),
    );
    return 'written';
  } catch (err) {
    if ((err as { name?: string }).name === 'TransactionCanceledException') return 'conflict';
    throw err;
  }
}

export async function registeredApps(db: LedgerDeps): Promise<string[]> {
  const items = await queryAll(db, {
    TableName: db.tables.checkpoints,
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': 'APPS' },
    ProjectionExpression: '#sk',
    ExpressionAttributeNames: { '#sk': 'sk' },
  });
  return items.map((i) => String(i.sk));
}

/** Up to where (a period boundary, ISO) the change index has been read; undefined at first. */
export async function scanMark(db: LedgerDeps): Promise<string | undefined> {
  const r = await db.dynamo.doc.send(
    new GetCommand({
      TableName: db.tables.checkpoints,
      Key: { pk: 'STATE', sk: 'SCAN' },
      ConsistentRead: true,
    }),
  );
  return r.Item ? String(r.Item.through) : undefined;
}

/** Moves the mark forward (never back, whichever copy of the sealer writes last). */
export async function setScanMark(db: LedgerDeps, through: string): Promise<void> {
  try {
    await db.dynamo.doc.send(
      new PutCommand({
        TableName: db.tables.checkpoints,
        Item: { pk: 'STATE', sk: 'SCAN', through },
        ConditionExpression: 'attribute_not_exists(pk) OR #t < :t',
        ExpressionAttributeNames: { '#t': 'through' },
        ExpressionAttributeValues: { ':t': through },
      }),
    );
  } catch (err) {
    if ((err as { name?: string }).name !== 'ConditionalCheckFailedException') throw err;
  }
}

/** Dispatches whose last change was stamped with a period start in [from, to) (any app). */
export async function changesIn(db: LedgerDeps, from: string, to: string): Promise<Change[]> {
  const shards = Array.from({ length: CHANGE_SHARDS }, (_, i) => i);
  const pages = await Promise.all(
    shards.map((s) =>
      queryAll(db, {
        TableName: db.tables.ledger,
        IndexName: 'gsi3',
        // Keys are `{stamp}#…`: every key with stamp `to` sorts after `to`, so BETWEEN ends before them.
        KeyConditionExpression: 'gsi3pk = :pk AND gsi3sk BETWEEN :from AND :to',
        ExpressionAttributeValues: { ':pk': `CHG#${s}`, ':from': from, ':to': to },
      }),
    ),
  );
  return pages.flat().flatMap((i) => parseChangeKey(String(i.gsi3sk)) ?? []);
}

/**
 * The leaves of an app's dispatches created in [start, end), in tree order (the `gsi1` order):
 * from `gsi1` and the carriers (app-pages.ts).
 */
export async function currentLeaves(
  db: LedgerDeps,
  appId: string,
  start: string,
  end: string,
): Promise<Leaf[]> {
  const leaves: Leaf[] = [];
  let after: string | undefined;
  do {
    const page = await readAppDispatches(db, { appId, from: start, to: end, after, want: 1000 });
    for (const i of page.items)
      leaves.push({
        dispatchId: String(dispatchIdOf(i)),
        createdAt: String(i.createdAt),
        headHash: String(i.headHash),
      });
    after = page.next?.gsi1sk;
  } while (after !== undefined);
  return leaves;
}

/** createdAt of the app's first dispatch, or undefined when it has none. */
export async function firstDispatchAt(db: LedgerDeps, appId: string): Promise<string | undefined> {
  const first = (await readAppDispatches(db, { appId, want: 1 })).items[0];
  return first ? String(first.createdAt) : undefined;
}

/** A checkpoint as exported: the leaves come with the checkpoint in force for a period in range. */
export interface ExportedCheckpoint extends Checkpoint {
  leaves?: Leaf[];
}

/**
 * The checkpoints an auditor needs to verify an app's dispatches created in [from, to): the
 * app's chain from the oldest checkpoint in force for a period overlapping the range (or the
 * one it replaced) through the newest, so every later version of those periods and every link
 * is there, and the leaves of each checkpoint in force for those periods.
 */
export async function checkpointsFor(
  db: LedgerDeps,
  appId: string,
  from: string,
  to: string,
): Promise<ExportedCheckpoint[]> {
  const head = await chainHead(db, appId);
  if (!head) return [];
  const pointers = await pointersOverlapping(db, appId, from, to);
  let start = Math.min(head.seq, ...pointers.map((p) => p.seq));
  let chain: Checkpoint[];
  for (;;) {
    chain = await readChain(db, appId, start);
    const need = Math.min(
      start,
      ...latestOverlapping(chain, from, to).map((c) => c.replaces?.seq ?? c.seq),
    );
    if (need >= start || need < 1) break;
    start = need;
  }
  const inForce = new Set(latestOverlapping(chain, from, to));
  return Promise.all(
    chain.map(async (c) =>
      inForce.has(c) ? { ...c, leaves: await readLeaves(db, appId, c.periodStart, c.root) } : c,
    ),
  );
}
