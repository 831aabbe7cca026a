import type { CreateTableCommandInput } from '@aws-sdk/client-dynamodb';

/** The ledger's TTL attribute: epoch seconds, from the app's retention (shared/domain/ledger/retention.ts). */
export const LEDGER_TTL_ATTR = 'retainUntil';

/**
 * What a dispatch shows when listed (shared/storage/ledger/dispatches.ts, `toDispatch`), and all the
 * ledger's `gsi1` and `gsi2` hold of it besides the keys: its creation fields, its status and
 * its hashes, never the webhook body or the attempt entries. An index entry is then well under
 * 1 KB (about 0.8), so each costs one write unit where a copy of the whole item cost two (about
 * 2 KB before dispatch items were packed, shared/storage/ledger/packed.ts; a long response excerpt can
 * still take a packed one past 1 KB), and only a change of one of these rewrites it. A packed
 * item leaves `entryHash`, `dispatchId` and the null ones out: `impliedFields` puts them back.
 */
export const DISPATCH_VIEW_ATTRS = [
  'dispatchId',
  'eventId',
  'event',
  'appId',
  'environment',
  'referenceId',
  'createdAt',
  'dispatchedAt',
  'postbackRequired',
  'postbackDueAt',
  'bodySha256',
  'deliveryStatus',
  'attempts',
  'lastAttemptAt',
  'nextAttemptAt',
  'deliveredAt',
  'complianceFlag',
  'worstFlag',
  'entryHash',
  'headHash',
] as const;

/**
 * DynamoDB tables, declared once; `applyTables` creates the missing ones at start and never
 * changes or deletes an existing table. Names are `${TABLE_PREFIX}${name}`.
 */
export interface TableDef {
  name: string;
  partitionKey: string;
  sortKey?: string;
  /**
   * Projection ALL unless `keysOnly` (the index then holds its keys and the table's) or
   * `include` (those keys and the attributes named).
   */
  indexes?: {
    name: string;
    partitionKey: string;
    sortKey?: string;
    keysOnly?: boolean;
    include?: readonly string[];
  }[];
  /** Attribute holding an epoch-seconds expiry; DynamoDB deletes the item after it. */
  ttlAttribute?: string;
  /**
   * The table's DynamoDB stream (new images), read by the outbox relay to find carriers
   * (shared/storage/outbox/carrier-stream.ts). A stream bills no write units.
   */
  stream?: boolean;
  description: string;
}

export const tableDefs = {
  entities: {
    name: 'entities',
    partitionKey: 'pk',
    sortKey: 'sk',
    indexes: [
      { name: 'gsi1', partitionKey: 'gsi1pk', sortKey: 'gsi1sk' },
      { name: 'gsi2', partitionKey: 'gsi2pk', sortKey: 'gsi2sk' },
      // Sparse: the due entries derived from the items they belong to (shared/storage/timers/derived.ts),
      // with only what their sweep needs. A lease or any other change of the item writes nothing here.
      {
        name: 'due',
        partitionKey: 'duepk',
        sortKey: 'duesk',
        include: ['duekind', 'appId', 'referenceId', 'transactionId'],
      },
    ],
    // The outbox relay finds the items that carry their commit's events (new transactions)
    // through it (shared/storage/outbox/carrier-stream.ts).
    stream: true,
    description:
      'Apps, keys, notices, principals, users’ claims and transactions with their records and history (one table, typed keys)',
  },
  outbox: {
    name: 'outbox',
    partitionKey: 'id',
    // Sparse: each writer's commits by creation time, and its progress item under `writers`
    // (shared/storage/outbox/outbox.ts): how the relay finds the events of a writer that stopped.
    indexes: [{ name: 'writer', partitionKey: 'obxw', sortKey: 'obxt', keysOnly: true }],
    ttlAttribute: 'expiresAt',
    description:
      'Events written in the same transaction as their change, never deleted by the service (TTL after 14 days); each writer’s progress item',
  },
  processed: {
    name: 'processed',
    partitionKey: 'pk',
    ttlAttribute: 'expiresAt',
    description: 'Consumer idempotency: one item per (consumer, event id) already applied',
  },
  idempotency: {
    name: 'idempotency',
    partitionKey: 'pk',
    ttlAttribute: 'expiresAt',
    description: 'HTTP Idempotency-Key records: the first response of a request, kept 24 h',
  },
  ledger: {
    name: 'ledger',
    partitionKey: 'pk',
    sortKey: 'sk',
    indexes: [
      // Dispatches by app and by principal, in event time (shared/ledger/queries.ts, export.ts):
      // what a listing shows of each, no body. A consent's creation dispatches are in no gsi2:
      // found through the principal's transactions (shared/storage/ledger/principal.ts). Dispatches the
      // dispatcher wrote with others of their app are in no gsi1: a carrier names them.
      { name: 'gsi1', partitionKey: 'gsi1pk', sortKey: 'gsi1sk', include: DISPATCH_VIEW_ATTRS },
      { name: 'gsi2', partitionKey: 'gsi2pk', sortKey: 'gsi2sk', include: DISPATCH_VIEW_ATTRS },
      // Change index: which dispatches changed in which checkpoint period (shared/storage/ledger/changes.ts).
      { name: 'gsi3', partitionKey: 'gsi3pk', sortKey: 'gsi3sk', keysOnly: true },
      // Sparse: carriers, dispatch items that list others of their app written with them
      // (shared/storage/ledger/app-pages.ts), by app and their listing `lk` (which starts with its
      // earliest event time): keys only, the listing being a key.
      { name: 'pages', partitionKey: 'appId', sortKey: 'lk', keysOnly: true },
      // Sparse: the dispatcher's retry due-index, derived from the dispatch items that have an
      // attempt due (shared/storage/ledger/dispatch-due.ts): their `duePk`/`dueSk`, with only what the
      // sweep needs. Moving a dispatch's due time is an update of its own item.
      {
        name: 'due',
        partitionKey: 'duePk',
        sortKey: 'dueSk',
        include: ['dueKind', 'appId', 'dispatchId'],
      },
    ],
    // Each item's retainUntil comes from its app's ledgerRetentionDays (docs/retention.md).
    ttlAttribute: LEDGER_TTL_ATTR,
    description:
      'Dispatches, attempts, postbacks and flag history (immutable entries, kept per the app’s retention)',
  },
  checkpoints: {
    name: 'checkpoints',
    partitionKey: 'pk',
    sortKey: 'sk',
    description:
      'Signed ledger checkpoints: per-app chains, the latest seal of each period, its Merkle leaves',
  },
  meta: {
    name: 'meta',
    partitionKey: 'id',
    description: 'The schema version the stored data is in (infra/definitions/schema.ts)',
  },
  timers: {
    name: 'timers',
    partitionKey: 'pk',
    sortKey: 'sk',
    description: 'Due-index: pk = time bucket + shard, sk = due time + id',
  },
} as const satisfies Record<string, TableDef>;

export type TableKey = keyof typeof tableDefs;
export type TableNames = Record<TableKey, string>;

export function tableNames(prefix: string): TableNames {
  return Object.fromEntries(
    Object.entries(tableDefs).map(([k, d]) => [k, `${prefix}${d.name}`]),
  ) as TableNames;
}

type IndexDef = NonNullable<TableDef['indexes']>[number];

const keySchemaOf = (pk: string, sk?: string) => [
  { AttributeName: pk, KeyType: 'HASH' as const },
  ...(sk ? [{ AttributeName: sk, KeyType: 'RANGE' as const }] : []),
];

/** One global secondary index as CreateTable and UpdateTable take it. */
export function indexInput(ix: IndexDef) {
  return {
    IndexName: ix.name,
    KeySchema: keySchemaOf(ix.partitionKey, ix.sortKey),
    Projection: ix.keysOnly
      ? { ProjectionType: 'KEYS_ONLY' as const }
      : ix.include
        ? { ProjectionType: 'INCLUDE' as const, NonKeyAttributes: [...ix.include] }
        : { ProjectionType: 'ALL' as const },
  };
}

export function createTableInput(prefix: string, def: TableDef): CreateTableCommandInput {
  const attrs = new Set<string>([def.partitionKey]);
  if (def.sortKey) attrs.add(def.sortKey);
  for (const ix of def.indexes ?? []) {
    attrs.add(ix.partitionKey);
    if (ix.sortKey) attrs.add(ix.sortKey);
  }
  return {
    TableName: `${prefix}${def.name}`,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [...attrs].map((a) => ({
      AttributeName: a,
      AttributeType: 'S' as const,
    })),
    KeySchema: keySchemaOf(def.partitionKey, def.sortKey),
    ...(def.indexes?.length ? { GlobalSecondaryIndexes: def.indexes.map(indexInput) } : {}),
    ...(def.stream ? { StreamSpecification: STREAM } : {}),
  };
}

/** The stream a table with `stream` has: new images, which the relay reads its carriers from. */
export const STREAM = { StreamEnabled: true, StreamViewType: 'NEW_IMAGE' } as const;
