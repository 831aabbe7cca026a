import fs from 'node:fs';
import path from 'node:path';
import { stackPaths } from '../infra/local/paths.js';
import { upStack, type StackHandle } from '../infra/local/stack.js';
import { base62 } from '../shared/domain/ids.js';
import {
  refuseEmbeddedInProduction,
  wantsEmbeddedStack,
  type BaseConfig,
} from '../shared/config.js';
import * as host from './host.js';
import type { Infra, ProcessOptions } from './host.js';
import type { Logger } from '../shared/logger.js';

/**
 * `bin/host.ts` with the embedded local stack as its default: what `npm start`
 * (`bin/start.ts`), each service's and worker's own `main.ts`, the tools (`npm run dlq`,
 * `npm run rekey`) and the tests run on. The production entry, `bin/serve.ts`, uses
 * `bin/host.ts` alone and never loads this module.
 */

export type RunningProcess = host.RunningProcess<StackHandle>;

/**
 * Resolves where Kafka and DynamoDB are: the configured ones, or the embedded local stack
 * (started now, or reused when `npm run infra:up` or another process already runs it). `signal`
 * aborts a start under way: what it started is stopped.
 */
export async function resolveInfra(
  config: BaseConfig,
  log: Logger,
  signal?: AbortSignal,
): Promise<Infra<StackHandle>> {
  if (!wantsEmbeddedStack(config)) return host.externalInfra(config);
  refuseEmbeddedInProduction(config);
  // Its JVMs watch this process: they stop with it however it ends.
  const stack = await upStack({
    mode: 'persistent',
    log: (m) => log.info(m),
    ...(signal ? { signal } : {}),
    ...(process.env.SVC_KAFKA_PORT ? { kafkaPort: Number(process.env.SVC_KAFKA_PORT) } : {}),
    ...(process.env.SVC_KAFKA_CONTROLLER_PORT
      ? { kafkaControllerPort: Number(process.env.SVC_KAFKA_CONTROLLER_PORT) }
      : {}),
    ...(process.env.SVC_DYNAMODB_PORT ? { dynamoPort: Number(process.env.SVC_DYNAMODB_PORT) } : {}),
  });
  return {
    config: {
      ...config,
      KAFKA_BROKERS: stack.kafkaBrokers,
      DYNAMODB_ENDPOINT: stack.dynamoEndpoint,
      SVC_ADMIN_TOKEN: config.SVC_ADMIN_TOKEN ?? embeddedAdminToken(log),
    },
    stack,
  };
}

/**
 * On the embedded stack with no SVC_ADMIN_TOKEN, a token is generated once, kept in
 * `.svc/admin-token` (mode 0600) and printed, so the admin API is never open.
 */
function embeddedAdminToken(log: Logger): string {
  const file = path.join(stackPaths().root, 'admin-token');
  try {
    const existing = fs.readFileSync(file, 'utf8').trim();
    if (existing.length >= 16) return existing;
  } catch {
    /* first start */
  }
  const token = `svc_admin_${base62(32)}`;
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `${token}\n`, { mode: 0o600 });
  log.info({ file }, 'generated an admin token');
  process.stdout.write(`\nAdmin token (kept in ${file}):\n  ${token}\n\n`);
  return token;
}

type Options = Omit<ProcessOptions<StackHandle>, 'infra'>;

/** Builds and starts one process hosting the given services and workers. */
export function startProcess(o: Options): Promise<RunningProcess> {
  return host.startProcess({ ...o, infra: resolveInfra });
}

/** What every main.ts runs: signal handling, then the start; failures in one line. */
export function main(o: Options): Promise<void> {
  return host.main({ ...o, infra: resolveInfra });
}
