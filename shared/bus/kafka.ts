import { Kafka, logLevel, type KafkaConfig, type LogEntry, type SASLOptions } from 'kafkajs';
import type { BaseConfig } from '../config.js';
import type { Logger } from '../logger.js';

/** Builds the kafkajs client from config; kafkajs logs go through pino. */
export function createKafka(
  c: Pick<
    BaseConfig,
    | 'KAFKA_CLIENT_ID'
    | 'KAFKA_SSL'
    | 'KAFKA_SASL_MECHANISM'
    | 'KAFKA_SASL_USERNAME'
    | 'KAFKA_SASL_PASSWORD'
  >,
  brokers: string[],
  log: Logger,
): Kafka {
  const kafkaLog = log.child({ component: 'kafkajs' });
  const cfg: KafkaConfig = {
    clientId: c.KAFKA_CLIENT_ID,
    brokers,
    ssl: c.KAFKA_SSL,
    connectionTimeout: 3000,
    requestTimeout: 10_000,
    retry: { initialRetryTime: 100, retries: 5, maxRetryTime: 2000 },
    logLevel: logLevel.WARN,
    logCreator:
      () =>
      ({ level, log: entry }: LogEntry) => {
        const { message, ...rest } = entry;
        if (level <= logLevel.ERROR) kafkaLog.error(rest, message);
        else if (level === logLevel.WARN) kafkaLog.warn(rest, message);
        else kafkaLog.debug(rest, message);
      },
  };
  if (c.KAFKA_SASL_MECHANISM && c.KAFKA_SASL_USERNAME && c.KAFKA_SASL_PASSWORD) {
    cfg.sasl = {
      mechanism: c.KAFKA_SASL_MECHANISM,
      username: c.KAFKA_SASL_USERNAME,
      password: c.KAFKA_SASL_PASSWORD,
    } as SASLOptions;
  }
  return new Kafka(cfg);
}

export function parseBrokers(list: string): string[] {
  return list
    .split(',')
    .map((b) => b.trim())
    .filter(Boolean);
}

/** Readiness: the cluster answers a metadata request. */
export async function pingKafka(kafka: Kafka): Promise<void> {
  const admin = kafka.admin({ retry: { retries: 0 } });
  try {
    await admin.connect();
    await admin.describeCluster();
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}
