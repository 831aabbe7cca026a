import {
  DescribeTableCommand,
  UpdateTableCommand,
  waitUntilTableExists,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, PutCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { STREAM, indexInput, tableDefs, type TableDef } from './tables.js';

/**
 * The version of the stored layout this build reads and writes. The `meta` table holds the
 * version the stored data is in (item `schema`). A change of stored shape bumps this number and
 * appends a migration that rewrites the data to it; the code keeps one reader, the new one.
 */
export const SCHEMA_VERSION = 1;

/** One step of `npm run migrate`: brings the data from `to - 1` to `to`. Safe to run again. */
export interface Migration {
  to: number;
  description: string;
  run(ctx: MigrationContext): Promise<void>;
}

export interface MigrationContext {
  client: DynamoDBClient;
  doc: DynamoDBDocumentClient;
  prefix: string;
  log: (msg: string) => void;
}

/** The migrations from version 1 on, in order (none yet: version 1 is the first layout). */
export const migrations: readonly Migration[] = [];

export class SchemaError extends Error {
  override readonly name = 'SchemaError';
}

const SCHEMA_ID = 'schema';

const metaTable = (prefix: string) => `${prefix}${tableDefs.meta.name}`;

/** The version the stored data is in; undefined when no version was ever recorded. */
export async function storedVersion(
  doc: DynamoDBDocumentClient,
  prefix: string,
): Promise<number | undefined> {
  const r = await doc.send(
    new GetCommand({ TableName: metaTable(prefix), Key: { id: SCHEMA_ID }, ConsistentRead: true }),
  );
  const v: unknown = r.Item?.version;
  return typeof v === 'number' ? v : undefined;
}

/** Records `to` as the stored version, only if it is still `from` (another migrator may be ahead). */
async function recordVersion(
  doc: DynamoDBDocumentClient,
  prefix: string,
  from: number | undefined,
  to: number,
): Promise<boolean> {
  try {
    await doc.send(
      new PutCommand({
        TableName: metaTable(prefix),
        Item: { id: SCHEMA_ID, version: to, at: new Date().toISOString() },
        ...(from === undefined
          ? { ConditionExpression: 'attribute_not_exists(id)' }
          : {
              ConditionExpression: 'version = :from',
              ExpressionAttributeValues: { ':from': from },
            }),
      }),
    );
    return true;
  } catch (err) {
    if ((err as { name?: string }).name === 'ConditionalCheckFailedException') return false;
    throw err;
  }
}

/** True when any table holds an item (besides the version record). */
async function holdsData(doc: DynamoDBDocumentClient, prefix: string): Promise<boolean> {
  for (const def of Object.values(tableDefs) as TableDef[]) {
    if (def.name === tableDefs.meta.name) continue;
    const r = await doc.send(
      new ScanCommand({ TableName: `${prefix}${def.name}`, Limit: 1, Select: 'COUNT' }),
    );
    if ((r.Count ?? 0) > 0 || r.LastEvaluatedKey !== undefined) return true;
  }
  return false;
}

const unversioned = (prefix: string) =>
  `the tables ${prefix}* hold data but no schema version: written by a build before versioning, which no build reads; delete those tables (on the embedded stack: npm run infra:down, then remove .svc/data)`;

/**
 * What a process checks at start, once the tables exist: the stored data is in this build's
 * version. Empty tables without a version are new and get it. Anything else is refused with
 * what to do, before the process reads or writes a single item.
 */
export async function checkSchema(client: DynamoDBClient, prefix: string): Promise<void> {
  const doc = DynamoDBDocumentClient.from(client);
  let v = await storedVersion(doc, prefix);
  if (v === undefined) {
    // A versioned process records the version before it writes anything: data seen without
    // a version, read again after it, was written by no versioned build.
    if (await holdsData(doc, prefix)) {
      v = await storedVersion(doc, prefix);
      if (v === undefined) throw new SchemaError(unversioned(prefix));
    } else {
      await recordVersion(doc, prefix, undefined, SCHEMA_VERSION);
      v = await storedVersion(doc, prefix);
    }
  }
  if (v === SCHEMA_VERSION) return;
  if (v !== undefined && v < SCHEMA_VERSION)
    throw new SchemaError(
      `the stored data is at schema version ${v} and this build needs ${SCHEMA_VERSION}: run npm run migrate`,
    );
  throw new SchemaError(
    `the stored data is at schema version ${String(v)}, newer than this build's ${SCHEMA_VERSION}: run a build that knows it`,
  );
}

/** Adds the indexes and the stream a table's definition has and the table lacks, one at a time. */
async function completeTable(
  client: DynamoDBClient,
  TableName: string,
  def: TableDef,
  log: (msg: string) => void,
  signal?: AbortSignal,
): Promise<void> {
  let waitingSince = 0;
  for (;;) {
    signal?.throwIfAborted();
    const t = (await client.send(new DescribeTableCommand({ TableName }))).Table;
    if (!t) throw new SchemaError(`table ${TableName} is not described`);
    const busy = [
      ...(t.TableStatus === 'ACTIVE' ? [] : [`table ${String(t.TableStatus)}`]),
      ...(t.GlobalSecondaryIndexes ?? [])
        .filter((i) => i.IndexStatus !== 'ACTIVE')
        .map((i) => `index ${i.IndexName} ${i.IndexStatus}`),
    ];
    if (busy.length > 0) {
      // A new index is backfilled before it is ACTIVE: minutes on a large table.
      if (Date.now() - waitingSince >= 10_000) {
        if (waitingSince > 0) log(`${TableName}: waiting for ${busy.join(', ')}`);
        waitingSince = Date.now();
      }
      await new Promise((r) => setTimeout(r, 1_000));
      continue;
    }
    waitingSince = 0;
    const have = new Set((t.GlobalSecondaryIndexes ?? []).map((i) => i.IndexName));
    const missing = (def.indexes ?? []).find((ix) => !have.has(ix.name));
    if (missing) {
      log(`adding index ${missing.name} to ${TableName} (waits until it is ACTIVE)`);
      await client.send(
        new UpdateTableCommand({
          TableName,
          AttributeDefinitions: [
            missing.partitionKey,
            ...(missing.sortKey ? [missing.sortKey] : []),
          ].map((a) => ({ AttributeName: a, AttributeType: 'S' as const })),
          GlobalSecondaryIndexUpdates: [{ Create: indexInput(missing) }],
        }),
      );
      continue;
    }
    if (def.stream && t.StreamSpecification?.StreamEnabled !== true) {
      log(`enabling the stream of ${TableName}`);
      await client.send(new UpdateTableCommand({ TableName, StreamSpecification: STREAM }));
      continue;
    }
    return;
  }
}

/**
 * `npm run migrate`: gives existing tables what their definitions gained (indexes, streams),
 * then runs each migration past the stored version in order, recording the version after each,
 * so a run cut short resumes at the step it was in. Two runs at once: each step is safe to run
 * again, and the version moves only forward (compare-and-set).
 */
export async function migrate(
  client: DynamoDBClient,
  prefix: string,
  log: (msg: string) => void,
  steps: readonly Migration[] = migrations,
  target = SCHEMA_VERSION,
  signal?: AbortSignal,
): Promise<{ from: number; to: number }> {
  const doc = DynamoDBDocumentClient.from(client);
  for (const def of Object.values(tableDefs) as TableDef[]) {
    const TableName = `${prefix}${def.name}`;
    await waitUntilTableExists({ client, maxWaitTime: 60 }, { TableName });
    await completeTable(client, TableName, def, log, signal);
  }
  let v = await storedVersion(doc, prefix);
  if (v === undefined) {
    if (await holdsData(doc, prefix)) v = await storedVersion(doc, prefix);
    if (v === undefined && (await holdsData(doc, prefix)))
      throw new SchemaError(unversioned(prefix));
  }
  if (v === undefined) {
    await recordVersion(doc, prefix, undefined, target);
    log(`new tables: schema version ${target}`);
    return { from: target, to: target };
  }
  const from = v;
  if (v > target)
    throw new SchemaError(
      `the stored data is at schema version ${v}, newer than this build's ${target}`,
    );
  for (const step of steps.filter((s) => s.to > from && s.to <= target)) {
    if (step.to !== v + 1)
      throw new SchemaError(`no migration from schema version ${v} to ${v + 1}`);
    log(`migrating to schema version ${step.to}: ${step.description}`);
    const started = Date.now();
    await step.run({ client, doc, prefix, log });
    if (!(await recordVersion(doc, prefix, v, step.to))) {
      const now = await storedVersion(doc, prefix);
      if (now === undefined || now < step.to)
        throw new SchemaError(
          `schema version changed under migration to ${step.to}: ${String(now)}`,
        );
    }
    log(`schema version ${step.to} in ${Date.now() - started} ms`);
    v = step.to;
  }
  if (v !== target) throw new SchemaError(`no migration from schema version ${v} to ${target}`);
  return { from, to: v };
}
