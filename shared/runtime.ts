import type { Kafka } from 'kafkajs';
import type { Registry } from 'prom-client';
import { applyTables, applyTopics } from '../infra/definitions/apply.js';
import { tableDefs, tableNames, type TableNames } from '../infra/definitions/tables.js';
import { topicName, topicDefs, type TopicKey } from '../infra/definitions/topics.js';
import { createKafka, parseBrokers, pingKafka } from './bus/kafka.js';
import { ApiDocs } from './http/openapi.js';
import { Producer } from './bus/producer.js';
import type { BaseConfig } from './config.js';
import type { Logger } from './logger.js';
import { createRegistry } from './metrics.js';
import { Processed } from './storage/outbox/idempotency.js';
import { Outbox } from './storage/outbox/outbox.js';
import { Relay } from './storage/outbox/relay.js';
import { getReferenceKey } from './domain/apps.js';
import type { ConsentStore } from './domain/consent/store.js';
import { deriveCreationMessages } from './storage/consents/carried.js';
import { DynamoConsentStore } from './storage/consents/store.js';
import { createDynamo, pingDynamo, type Dynamo } from './storage/dynamo.js';
import { ensureFamily } from './storage/timers/due.js';
import { instrumentDynamo } from './storage/instrument.js';
import type { SweepStores } from './domain/consent/sweep-ports.js';
import { sweepStores } from './storage/consents/sweeps.js';
import type { Ledger } from './ledger/port.js';
import { DynamoLedger } from './storage/ledger/dynamo-ledger.js';

import type { ApiKeyStore } from './domain/apiKeys.js';
import type { AppStore } from './domain/apps.js';
import type { ChecklistStore } from './domain/observations.js';
import type { NoticeStore } from './domain/notices.js';
import { dynamoApiKeyStore } from './storage/keys/store.js';
import { dynamoAppStore } from './storage/apps/store.js';
import { dynamoChecklistStore } from './storage/checklist/store.js';
import { dynamoNoticeStore } from './storage/notices/store.js';
import { dynamoSessionStore } from './storage/console/sessions.js';
import type { IdempotencyStore } from './http/idempotency.js';
import { dynamoIdempotencyStore } from './storage/http/idempotency.js';
export type TopicNames = Record<TopicKey, string>;

/** The clients one process needs, built once in its composition root and passed down. */
export interface Runtime {
  config: BaseConfig;
  log: Logger;
  registry: Registry;
  kafka: Kafka;
  producer: Producer;
  dynamo: Dynamo;
  tables: TableNames;
  topics: TopicNames;
  outbox: Outbox;
  /** Publishes the commits of writers that stopped; run by the relay worker (workers/relay). */
  relay: Relay;
  /** Principals, transactions and users' claims, written with their events (`outbox`). */
  consents: ConsentStore;
  processed: Processed;
  /** The dispatch ledger (shared/ledger/port.ts), on the store. */
  ledger: Ledger;
  readiness: Record<string, () => Promise<void>>;
  /** Routes register their schemas here; served as /openapi.json and /docs. */
  docs: ApiDocs;
  /** The consent sweeps' storage (shared/storage/consents/sweeps.ts). */
  sweeps: SweepStores;
  // The domain's stores (ports declared in shared/domain, adapters in shared/storage).
  apps: AppStore;
  apiKeys: ApiKeyStore;
  notices: NoticeStore;
  checklist: ChecklistStore;
  /** The console's sessions (services/console/session.ts declares what it needs of them). */
  consoleSessions: ReturnType<typeof dynamoSessionStore>;
  idempotency: IdempotencyStore;
  close(): Promise<void>;
}

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
