import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import { loadConfig, type BaseConfig } from '../../shared/config.js';
import { createLogger, type Logger } from '../../shared/logger.js';
import { applyDefinitions, createRuntime } from '../../bin/compose.js';
import type { Runtime } from '../../shared/runtime.js';
import { startProcess, type RunningProcess } from '../../bin/process.js';
import type { ServiceModule, WorkerModule } from '../../shared/module.js';
import { documentOrigin } from './openapi-check.js';
import { splitTuning } from './tuning.js';

/**
 * The environment that puts a process on the shared real stack with topic and table names of
 * its own, and nothing else: what a user running on their own Kafka and DynamoDB would give.
 */
export function stackEnv(name: string): Record<string, string> {
  const id = `${name}-${randomBytes(3).toString('hex')}`;
  return {
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    KAFKA_BROKERS: inject('kafkaBrokers'),
    DYNAMODB_ENDPOINT: inject('dynamoEndpoint'),
    TOPIC_PREFIX: `t.${id}.`,
    TABLE_PREFIX: `t_${id.replace(/-/g, '_')}_`,
    PORT: '0',
  };
}

/**
 * Config for one test file: the shared real stack, with topic and table names of its own.
 * `extra` may name settings and fixed values (shared/tuning.ts) alike; the fixed values go to
 * `loadConfig` in code.
 */
export function testConfig(name: string, extra: Record<string, string> = {}): BaseConfig {
  const env = stackEnv(name);
  const { env: settings, tuning } = splitTuning({
    KAFKA_CLIENT_ID: `test-${name}`,
    OUTBOX_RELAY_INTERVAL_MS: '200',
    OUTBOX_WRITER_STALE_MS: '3000',
    // Feature tests fire expiry timers within a second, as every other family.
    EXPIRY_SWEEP_INTERVAL_MS: '1000',
    DUTY_SWEEP_INTERVAL_MS: '1000',
    // Test receivers listen on loopback; outside the embedded default that must be configured.
    WEBHOOK_ALLOW_LOOPBACK_SANDBOX: 'true',
    // Feature tests share two cores with two JVMs and other test files; the 1.8 s answer
    // deadline, the 2 s store timeout and refusals while the event loop lags are for production
    // and the fault suite (test/chaos), not a reason for a feature test to fail on a busy
    // machine (test/foundation/admission.test.ts tests the lag control itself).
    HTTP_DEADLINE_MS: '20000',
    DYNAMODB_REQUEST_TIMEOUT_MS: '10000',
    HTTP_LAG_SHED_MS: '0',
    ...extra,
  });
  return loadConfig({ ...env, ...settings }, tuning);
}

export function testLogger(config: BaseConfig): Logger {
  return createLogger({ level: config.LOG_LEVEL });
}

/** A runtime (clients + definitions applied) against the shared real stack. */
export async function testRuntime(
  name: string,
  extra: Record<string, string> = {},
): Promise<Runtime> {
  const config = testConfig(name, extra);
  const rt = createRuntime(config, testLogger(config));
  await applyDefinitions(rt);
  return rt;
}

/** A whole process (HTTP on a free port + workers) against the shared real stack. */
export async function testProcess(
  name: string,
  services: ServiceModule[],
  workers: WorkerModule[] = [],
  extra: Record<string, string> = {},
): Promise<RunningProcess> {
  const config = testConfig(name, extra);
  const p = await startProcess({ name, services, workers, config, log: testLogger(config) });
  documentOrigin(p.url);
  return p;
}
