import {
  CreateTableCommand,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  UpdateTimeToLiveCommand,
  waitUntilTableExists,
  type DynamoDBClient,
  type TableDescription,
} from '@aws-sdk/client-dynamodb';
import type { Admin } from 'kafkajs';
import { checkSchema, SchemaError } from './schema.js';
import { tableDefs, createTableInput, type TableDef } from './tables.js';
import { topicDefs, type TopicDef } from './topics.js';

type Log = (msg: string) => void;

/**
 * What an existing table lacks of its definition (an ACTIVE index, its stream): such a table
 * is from an earlier schema, which `npm run migrate` completes; a process does not run on it.
 */
function lacking(def: TableDef, table: TableDescription | undefined): string[] {
  const status = new Map(
    (table?.GlobalSecondaryIndexes ?? []).map((i) => [i.IndexName, i.IndexStatus]),
  );
  const out = (def.indexes ?? [])
    .filter((ix) => status.get(ix.name) !== 'ACTIVE')
    .map((ix) => `index ${ix.name}${status.has(ix.name) ? ` (${status.get(ix.name)})` : ''}`);
  if (def.stream && table?.StreamSpecification?.StreamEnabled !== true) out.push('its stream');
  return out;
}

/**
 * Turns on the table's TTL when its definition names an attribute and the table has none (a
 * table created before the definition gained it). Never turns TTL off or moves it to another
 * attribute: DynamoDB allows one change an hour, and a table's TTL is the operator's to change.
 * A failure does not stop the start (items keep their TTL attribute and are deleted once TTL is
 * on); it is logged.
 */
async function enableTtl(client: DynamoDBClient, TableName: string, def: TableDef, log: Log) {
  if (!def.ttlAttribute) return;
  try {
    const now = await client.send(new DescribeTimeToLiveCommand({ TableName }));
    const status = now.TimeToLiveDescription?.TimeToLiveStatus;
    if (status !== undefined && status !== 'DISABLED') return;
    await client.send(
      new UpdateTimeToLiveCommand({
        TableName,
        TimeToLiveSpecification: { AttributeName: def.ttlAttribute, Enabled: true },
      }),
    );
    log(`enabled TTL on ${TableName}.${def.ttlAttribute}`);
  } catch (err) {
    // Usually another process enabling it at the same moment (ValidationException).
    const name = (err as { name?: string }).name ?? 'Error';
    if (name !== 'ValidationException')
      log(`could not enable TTL on ${TableName}: ${name} ${(err as Error).message}`);
  }
}

/**
 * Creates missing tables (with their indexes, stream and TTL), refuses tables that lack part of
 * their definition, then checks the stored data's schema version (schema.ts, `checkSchema`).
 */
export async function applyTables(
  client: DynamoDBClient,
  prefix: string,
  log: Log = () => undefined,
) {
  await applyTablesOnly(client, prefix, log, true);
  await checkSchema(client, prefix);
}

/** Creates missing tables; with `strict`, an existing table lacking part of its definition is refused. */
export async function applyTablesOnly(
  client: DynamoDBClient,
  prefix: string,
  log: Log = () => undefined,
  strict = false,
) {
  await Promise.all(
    Object.values(tableDefs).map(async (def: TableDef) => {
      const TableName = `${prefix}${def.name}`;
      const described = await client
        .send(new DescribeTableCommand({ TableName }))
        .then((r) => ({ table: r.Table }))
        .catch((err: { name?: string }) => {
          if (err.name === 'ResourceNotFoundException') return undefined;
          throw err;
        });
      if (described) {
        const missing = lacking(def, described.table);
        if (strict && missing.length > 0)
          throw new SchemaError(
            `table ${TableName} lacks ${missing.join(' and ')}: run npm run migrate`,
          );
        await enableTtl(client, TableName, def, log);
        return;
      }
      try {
        await client.send(new CreateTableCommand(createTableInput(prefix, def)));
        log(`created table ${TableName}`);
      } catch (err) {
        // Another process created it between our describe and create: that is fine.
        if ((err as { name?: string }).name !== 'ResourceInUseException') throw err;
      }
      await waitUntilTableExists({ client, maxWaitTime: 60 }, { TableName });
      await enableTtl(client, TableName, def, log);
    }),
  );
}

/** Creates missing topics; existing topics keep their partitions and config. */
export async function applyTopics(
  admin: Admin,
  prefix: string,
  replicationFactor = 1,
  log: Log = () => undefined,
) {
  const existing = new Set(await admin.listTopics());
  const missing = (Object.values(topicDefs) as TopicDef[]).filter(
    (t) => !existing.has(`${prefix}${t.name}`),
  );
  if (missing.length === 0) return;
  await admin.createTopics({
    // kafkajs' own wait gives up on UNKNOWN_TOPIC_OR_PARTITION right after creation; poll instead.
    waitForLeaders: false,
    topics: missing.map((t) => ({
      topic: `${prefix}${t.name}`,
      numPartitions: t.partitions,
      replicationFactor,
      configEntries: [{ name: 'retention.ms', value: String(t.retentionMs) }],
    })),
  });
  const names = missing.map((t) => `${prefix}${t.name}`);
  const deadline = Date.now() + 30_000;
  for (;;) {
    const ready = await admin
      .fetchTopicMetadata({ topics: names })
      .then((m) =>
        m.topics.every((t) => t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0)),
      )
      .catch(() => false);
    if (ready) break;
    if (Date.now() > deadline)
      throw new Error(`topics ${names.join(', ')} have no leaders after 30 s`);
    await new Promise((r) => setTimeout(r, 100));
  }
  for (const t of missing) log(`created topic ${prefix}${t.name} (${t.partitions} partitions)`);
}
