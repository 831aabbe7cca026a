import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { Kafka, logLevel } from 'kafkajs';
import { StackError } from './errors.js';
import { spawnJava, waitReady, type JavaProcess } from './proc.js';

export interface KafkaOptions {
  jarsDir: string;
  dataDir: string;
  logFile: string;
  port: number;
  controllerPort: number;
  heapMb?: number;
  /**
   * How long the broker waits for more members before the first assignment of an empty
   * consumer group (`group.initial.rebalance.delay.ms`; Kafka's own default, 3 s). Copies of a
   * worker that restart together then join one generation, instead of the first taking every
   * partition and starting its backlog only to hand half of it over, attempts still unrecorded,
   * in a rebalance a moment later (the copies `workers-down-60` counted). 0 for the test suite,
   * whose many short-lived groups would each wait.
   */
  initialRebalanceDelayMs?: number;
  /** The JVM runs on after this process ends (`spawnJava`); otherwise it stops with it. */
  outlive?: boolean;
}

const log4j = `log4j.rootLogger=WARN, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.org.apache.kafka.common.utils.AppInfoParser=INFO
log4j.logger.kafka.server.KafkaRaftServer=INFO
`;

function serverProperties(o: KafkaOptions, logDir: string): string {
  return [
    'process.roles=broker,controller',
    'node.id=1',
    `controller.quorum.voters=1@127.0.0.1:${o.controllerPort}`,
    `listeners=PLAINTEXT://127.0.0.1:${o.port},CONTROLLER://127.0.0.1:${o.controllerPort}`,
    `advertised.listeners=PLAINTEXT://127.0.0.1:${o.port}`,
    'controller.listener.names=CONTROLLER',
    'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
    'inter.broker.listener.name=PLAINTEXT',
    `log.dirs=${logDir}`,
    'num.partitions=1',
    'auto.create.topics.enable=false',
    'offsets.topic.replication.factor=1',
    'offsets.topic.num.partitions=4',
    'transaction.state.log.replication.factor=1',
    'transaction.state.log.min.isr=1',
    'transaction.state.log.num.partitions=4',
    `group.initial.rebalance.delay.ms=${o.initialRebalanceDelayMs ?? 3_000}`,
    'num.network.threads=2',
    'num.io.threads=4',
    '',
  ].join('\n');
}

/**
 * A KRaft cluster id: 16 random bytes, base64url without padding (what `kafka-storage
 * random-uuid` prints). Never one starting with `-`: `kafka-storage format -t -…` takes it for
 * an option and fails ("argument --cluster-id/-t: expected one argument"), one draw in 64;
 * Kafka's own `Uuid.randomUuid()` draws again for the same reason.
 */
export function clusterId(): string {
  for (;;) {
    const id = randomBytes(16).toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}

function javaArgs(o: KafkaOptions, mainClass: string, rest: string[]): string[] {
  return [
    `-Xmx${o.heapMb ?? 512}m`,
    '-Xms128m',
    '-XX:+UseG1GC',
    '-Djava.awt.headless=true',
    `-Dlog4j.configuration=file:${path.join(o.dataDir, 'log4j.properties')}`,
    '-cp',
    `${o.jarsDir}/*`,
    mainClass,
    ...rest,
  ];
}

/** Writes the config, formats storage on first use, and starts the single KRaft node. */
export function launchKafka(o: KafkaOptions): JavaProcess {
  const logDir = path.join(o.dataDir, 'log');
  fs.mkdirSync(logDir, { recursive: true });
  const props = path.join(o.dataDir, 'server.properties');
  fs.writeFileSync(props, serverProperties(o, logDir));
  fs.writeFileSync(path.join(o.dataDir, 'log4j.properties'), log4j);
  if (!fs.existsSync(path.join(logDir, 'meta.properties'))) {
    const format = () =>
      spawnSync(
        'java',
        javaArgs({ ...o, heapMb: 256 }, 'kafka.tools.StorageTool', [
          'format',
          '-t',
          clusterId(),
          '-c',
          props,
        ]),
        { encoding: 'utf8' },
      );
    let r = format();
    // Once seen to fail on a busy machine with nothing wrong in the config (a cluster id starting
    // with `-`, since excluded, fails the same way): one more try.
    if (r.status !== 0 && !fs.existsSync(path.join(logDir, 'meta.properties'))) r = format();
    if (r.status !== 0) {
      const lines = `${r.stderr ?? ''}\n${r.stdout ?? ''}`
        .split('\n')
        .map((l) => l.trim())
        .filter(Boolean);
      const why =
        r.error?.message ??
        (lines.slice(-3).join(' | ') || (r.signal ? `killed by ${r.signal}` : `exit ${r.status}`));
      throw new StackError(`formatting Kafka storage in ${logDir} failed: ${why}`);
    }
  }
  return spawnJava(javaArgs(o, 'kafka.Kafka', [props]), o.logFile, o.dataDir, o.outlive);
}

/** Ready means a kafkajs admin can describe the cluster. */
export async function kafkaReady(brokers: string[]): Promise<boolean> {
  const admin = new Kafka({
    clientId: 'svc-probe',
    brokers,
    logLevel: logLevel.NOTHING,
    connectionTimeout: 1000,
    retry: { retries: 0 },
  }).admin();
  try {
    await admin.connect();
    const c = await admin.describeCluster();
    return c.brokers.length > 0 && c.controller !== null;
  } catch {
    return false;
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

export async function waitKafka(
  proc: JavaProcess | undefined,
  brokers: string[],
  timeoutMs: number,
  signal?: AbortSignal,
) {
  await waitReady('Kafka', proc, () => kafkaReady(brokers), timeoutMs, signal);
}

/** The version the running broker printed in its log ("Kafka version: 3.9.1"). */
export function kafkaVersion(logFile: string): string | undefined {
  try {
    const m = [...fs.readFileSync(logFile, 'utf8').matchAll(/Kafka version: (\S+)/g)].at(-1);
    return m?.[1];
  } catch {
    return undefined;
  }
}
