import {
  CreateTableCommand,
  DescribeTableCommand,
  UpdateTimeToLiveCommand,
  waitUntilTableExists,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import type { Admin } from 'kafkajs';
import { tableDefs, createTableInput, type TableDef } from './tables.js';
import { topicDefs, type TopicDef } from './topics.js';

type Log = (msg: string) => void;

/** Creates missing tables (and their TTL setting); existing tables are left as they are. */
export async function applyTables(
  client: DynamoDBClient,
  prefix: string,
  log: Log = () => undefined,
) {
  await Promise.all(
    Object.values(tableDefs).map(async (def: TableDef) => {
      const TableName = `${prefix}${def.name}`;
      const exists = await client
        .send(new DescribeTableCommand({ TableName }))
        .then(() => true)
        .catch((err: { name?: string }) => {
          if (err.name === 'ResourceNotFoundException') return false;
          throw err;
        });
      if (exists) return;
      try {
        await client.send(new CreateTableCommand(createTableInput(prefix, def)));
        log(`created table ${TableName}`);
      } catch (err) {
        // Another process created it between our describe and create: that is fine.
        if ((err as { name?: string }).name !== 'ResourceInUseException') throw err;
      }
      await waitUntilTableExists({ client, maxWaitTime: 60 }, { TableName });
      if (def.ttlAttribute) {
        await client
          .send(
            new UpdateTimeToLiveCommand({
              TableName,
              TimeToLiveSpecification: { AttributeName: def.ttlAttribute, Enabled: true },
            }),
          )
          .catch(() => undefined); // already enabled
      }
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
