import { applyTables, applyTopics } from '../infra/definitions/apply.js';
import { tableDefs, tableNames } from '../infra/definitions/tables.js';
import { topicName, topicDefs, type TopicKey } from '../infra/definitions/topics.js';
import { createKafka, parseBrokers, pingKafka } from '../shared/bus/kafka.js';
import { ApiDocs } from '../shared/http/openapi.js';
import { Producer } from '../shared/bus/producer.js';
import type { BaseConfig } from '../shared/config.js';
import type { Logger } from '../shared/logger.js';
import { createRegistry } from '../shared/metrics.js';
import type { Runtime, TopicNames } from '../shared/runtime.js';
import { Processed } from '../shared/storage/outbox/idempotency.js';
import { Outbox } from '../shared/storage/outbox/outbox.js';
import { Relay } from '../shared/storage/outbox/relay.js';
import { getReferenceKey } from '../shared/domain/apps.js';
import { deriveCreationMessages } from '../shared/storage/consents/carried.js';
import { DynamoConsentStore } from '../shared/storage/consents/store.js';
import { createDynamo, pingDynamo } from '../shared/storage/dynamo.js';
import { ensureFamily } from '../shared/storage/timers/due.js';
import { instrumentDynamo } from '../shared/storage/instrument.js';
import { sweepStores } from '../shared/storage/consents/sweeps.js';
import type { Ledger } from '../shared/ledger/port.js';
import { DynamoLedger } from '../shared/storage/ledger/dynamo-ledger.js';
import { dynamoApiKeyStore } from '../shared/storage/keys/store.js';
import { dynamoAppStore } from '../shared/storage/apps/store.js';
import { dynamoChecklistStore } from '../shared/storage/checklist/store.js';
import { dynamoNoticeStore } from '../shared/storage/notices/store.js';
import { dynamoSessionStore } from '../shared/storage/console/sessions.js';
import { dynamoIdempotencyStore } from '../shared/storage/http/idempotency.js';
import { dynamoPrincipalLanes } from '../shared/storage/webhooks/ordering.js';

/**
 * The composition root: the one place the object graph of a process is built, from its
 * configuration, the clients (Kafka, DynamoDB) and the adapters of shared/storage behind the
 * ports the features use (`Runtime`, shared/runtime.ts). Run by the host (bin/host.ts) and the
 * tools that work on the store directly (bin/dlq.ts, bin/rekey.ts).
 */

export function createRuntime(
  config: BaseConfig,
  log: Logger,
  registry = createRegistry(),
): Runtime {
  if (!config.KAFKA_BROKERS) throw new Error('KAFKA_BROKERS is not set');
  const kafka = createKafka(config, parseBrokers(config.KAFKA_BROKERS), log);
  const producer = new Producer(kafka, log);
  const dynamo = createDynamo(config);
  // Each table's keys and indexes, by full name, built once (read on every write).
  const shapes = new Map(
    Object.values(tableDefs).map((d) => [
      `${config.TABLE_PREFIX}${d.name}`,
      {
        keys: 'sortKey' in d ? [d.partitionKey, d.sortKey] : [d.partitionKey],
        indexes: 'indexes' in d ? d.indexes : [],
      },
    ]),
  );
  instrumentDynamo(dynamo.client, registry, config.TABLE_PREFIX, (table) => shapes.get(table));
  const tables = tableNames(config.TABLE_PREFIX);
  const topics = Object.fromEntries(
    Object.keys(topicDefs).map((k) => [k, topicName(config.TOPIC_PREFIX, k as TopicKey)]),
  ) as TopicNames;
  const outboxTable = {
    doc: dynamo.doc,
    table: tables.outbox,
    producer,
    log,
    registry,
    keyAttributes: (table: string) => shapes.get(table)?.keys ?? [],
  };
  const outbox = new Outbox(outboxTable, { retryIntervalMs: config.OUTBOX_RELAY_INTERVAL_MS });
  const relay = new Relay(
    {
      ...outboxTable,
      writerIndex: 'writer',
      streams: { client: dynamo.client, streams: dynamo.streams },
      // A new transaction's item carries its creation events (mostly as derivable from it): the
      // relay finds it through the table's stream and rebuilds them (the consent store's
      // carried.ts).
      carriers: [
        {
          table: tables.entities,
          derive: (item) =>
            deriveCreationMessages(item, {
              topic: topics.consentEvents,
              baseUrl: config.PUBLIC_BASE_URL,
            }),
        },
      ],
      self: outbox.self,
    },
    { staleMs: config.OUTBOX_WRITER_STALE_MS },
  );
  const processed = new Processed(dynamo.doc, tables.processed);
  const consents = new DynamoConsentStore({
    dynamo,
    tables,
    config,
    topics,
    log,
    outbox,
    referenceKey: (appId) => getReferenceKey(rt, appId),
    ensureTimers: (nowMs) => ensureFamily(rt, 'expiry', config.TIMER_SHARDS, nowMs),
  });
  const ledger: Ledger = new DynamoLedger({ dynamo, tables, config });
  let closed: Promise<void> | undefined;
  const sweeps = sweepStores({ dynamo, tables, config, consents });
  const stores = { dynamo, tables };
  const rt: Runtime = {
    config,
    log,
    registry,
    kafka,
    producer,
    dynamo,
    tables,
    topics,
    outbox,
    relay,
    consents,
    processed,
    ledger,
    docs: new ApiDocs(),
    sweeps,
    apps: dynamoAppStore(stores),
    apiKeys: dynamoApiKeyStore(stores),
    notices: dynamoNoticeStore(stores),
    checklist: dynamoChecklistStore(stores),
    consoleSessions: dynamoSessionStore(stores),
    idempotency: dynamoIdempotencyStore(stores),
    principalLanes: dynamoPrincipalLanes(stores),
    readiness: {
      dynamodb: () => pingDynamo(dynamo),
      kafka: () => pingKafka(kafka),
    },
    close: () =>
      (closed ??= (async () => {
        await outbox.close().catch(() => undefined);
        await producer.close().catch(() => undefined);
        dynamo.close();
      })()),
  };
  return rt;
}

/** Creates missing tables and topics (idempotent, never destructive). */
export async function applyDefinitions(rt: Runtime): Promise<void> {
  const admin = rt.kafka.admin();
  await admin.connect();
  try {
    await Promise.all([
      applyTopics(admin, rt.config.TOPIC_PREFIX, rt.config.KAFKA_REPLICATION_FACTOR, (m) =>
        rt.log.info(m),
      ),
      applyTables(rt.dynamo.client, rt.config.TABLE_PREFIX, (m) => rt.log.info(m)),
    ]);
    // The relay finds carriers through their table's stream alone.
    await rt.relay.assertStreams();
  } finally {
    await admin.disconnect();
  }
}
