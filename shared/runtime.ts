import type { Kafka } from 'kafkajs';
import type { Registry } from 'prom-client';
import type { TableNames } from '../infra/definitions/tables.js';
import type { TopicKey } from '../infra/definitions/topics.js';
import type { ApiDocs } from './http/openapi.js';
import type { Producer } from './bus/producer.js';
import type { BaseConfig } from './config.js';
import type { Logger } from './logger.js';
import type { Processed } from './storage/outbox/idempotency.js';
import type { Outbox } from './storage/outbox/outbox.js';
import type { Relay } from './storage/outbox/relay.js';
import type { ConsentStore } from './domain/consent/store.js';
import type { Dynamo } from './storage/dynamo.js';
import type { SweepStores } from './domain/consent/sweep-ports.js';
import type { Ledger } from './ledger/port.js';
import type { ApiKeyStore } from './domain/apiKeys.js';
import type { AppStore } from './domain/apps.js';
import type { ChecklistStore } from './domain/observations.js';
import type { NoticeStore } from './domain/notices.js';
import type { dynamoSessionStore } from './storage/console/sessions.js';
import type { IdempotencyStore } from './http/idempotency.js';
import type { PrincipalLanes } from './domain/webhook-ordering.js';

export type TopicNames = Record<TopicKey, string>;

/**
 * The clients one process needs, built once and passed down. Only declared here: the object
 * graph is built in bin/compose.ts (`createRuntime`), the composition root.
 */
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
  /** Per-principal webhook order (shared/domain/webhook-ordering.ts), for the dispatcher. */
  principalLanes: PrincipalLanes;
  close(): Promise<void>;
}
