import {
  CreateTableCommand,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  UpdateTableCommand,
  UpdateTimeToLiveCommand,
  waitUntilTableExists,
  type DynamoDBClient,
  type TableDescription,
} from '@aws-sdk/client-dynamodb';
import type { Admin } from 'kafkajs';
import { tableDefs, createTableInput, indexInput, STREAM, type TableDef } from './tables.js';
import { topicDefs, type TopicDef } from './topics.js';

type Log = (msg: string) => void;

/**
 * Adds the indexes a table definition gained since the table was created (one a call: that
 * is all DynamoDB accepts; the next start adds the next). Never removes or changes an index.
 * On AWS a new index is backfilled before it can be queried; its readers retry meanwhile.
 */
async function addMissingIndexes(
  client: DynamoDBClient,
  TableName: string,
  def: TableDef,
  table: TableDescription | undefined,
  log: Log,
) {
  const have = new Set((table?.GlobalSecondaryIndexes ?? []).map((i) => i.IndexName));
  const missing = (def.indexes ?? []).find((ix) => !have.has(ix.name));
  if (!missing) return;
  try {
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
    log(`adding index ${missing.name} to table ${TableName}`);
  } catch (err) {
    // Another process is adding it (or another index) right now: fine, it will be there.
    const name = (err as { name?: string }).name;
    if (name !== 'ResourceInUseException' && name !== 'LimitExceededException') throw err;
  }
}

/**
 * Turns on the table's stream when its definition has one and the table has none. Never turns a
 * stream off or changes its view.
 */
async function enableStream(
  client: DynamoDBClient,
  TableName: string,
  def: TableDef,
  table: TableDescription | undefined,
  log: Log,
) {
  if (!def.stream || table?.StreamSpecification?.StreamEnabled === true) return;
  try {
    await client.send(new UpdateTableCommand({ TableName, StreamSpecification: STREAM }));
    log(`enabled the stream of ${TableName}`);
  } catch (err) {
    // Another process is changing the table (its stream, or an index) right now: the next start
    // tries again (a start fails while a carrier table has no stream: Outbox.assertStreams).
    const name = (err as { name?: string }).name;
    if (name !== 'ResourceInUseException' && name !== 'LimitExceededException') throw err;
    log(`could not enable the stream of ${TableName} yet (${name}); the next start tries again`);
  }
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

/** Creates missing tables (and their TTL and stream) and adds missing indexes and streams; nothing is removed. */
export async function applyTables(
  client: DynamoDBClient,
  prefix: string,
  log: Log = () => undefined,
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
        await addMissingIndexes(client, TableName, def, described.table, log);
        await enableStream(client, TableName, def, described.table, log);
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
