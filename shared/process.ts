import fs from 'node:fs';
import path from 'node:path';
import type { Express } from 'express';
import type { Server } from 'node:http';
import { StackError } from '../infra/local/errors.js';
import { stackPaths } from '../infra/local/paths.js';
import { upStack, type StackHandle } from '../infra/local/stack.js';
import { base62 } from './domain/ids.js';
import {
  ConfigError,
  loadConfig,
  redactConfig,
  refuseEmbeddedInProduction,
  wantsEmbeddedStack,
  type BaseConfig,
} from './config.js';
import { mountDocs } from './http/openapi.js';
import { closeServer, createHttpApp, finishHttpApp, listen } from './http/server.js';
import { createLogger, type Logger } from './logger.js';
import { applyDefinitions, createRuntime, type Runtime } from './runtime.js';
import { installShutdown, makeCloser, type ShutdownStep } from './shutdown.js';
import { startTelemetry } from './telemetry.js';
import { withRetries } from './backoff.js';

/** An HTTP service: mounts its routes on the shared app. */
export interface ServiceModule {
  name: string;
  mount(app: Express, rt: Runtime): void | Promise<void>;
}

/** A worker: starts consuming or sweeping; `stop` drains. */
export interface WorkerModule {
  name: string;
  start(rt: Runtime): Promise<{ stop(): Promise<void> }>;
}

export interface RunningProcess {
  rt: Runtime;
  server: Server;
  stack: StackHandle | undefined;
  url: string;
  close(): Promise<void>;
}

/**
 * Resolves where Kafka and DynamoDB are: the configured ones, or the embedded local stack
 * (started now, or reused when `npm run infra:up` or another process already runs it).
 */
export async function resolveInfra(config: BaseConfig, log: Logger) {
  if (!wantsEmbeddedStack(config)) {
    if (!config.KAFKA_BROKERS)
      throw new ConfigError('KAFKA_BROKERS must be set when DYNAMODB_ENDPOINT or AWS_REGION is');
    if (!config.DYNAMODB_ENDPOINT && !config.AWS_REGION)
      throw new ConfigError('DYNAMODB_ENDPOINT or AWS_REGION must be set when KAFKA_BROKERS is');
    return { config, stack: undefined };
  }
  refuseEmbeddedInProduction(config);
  const stack = await upStack({
    mode: 'persistent',
    log: (m) => log.info(m),
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

/** Builds and starts one process hosting the given services and workers. */
export async function startProcess(o: {
  name: string;
  services: ServiceModule[];
  workers: WorkerModule[];
  config?: BaseConfig;
  log?: Logger;
}): Promise<RunningProcess> {
  const baseConfig = o.config ?? loadConfig();
  const log = o.log ?? createLogger({ level: baseConfig.LOG_LEVEL, name: o.name });
  const steps: ShutdownStep[] = [];
  const close = makeCloser(steps, log);
  let stack: StackHandle | undefined;
  let rt: Runtime | undefined;
  try {
    const infra = await resolveInfra(baseConfig, log);
    stack = infra.stack;
    const config = infra.config;
    rt = createRuntime(config, log);
    // Tables and topics are created once; a busy or just-started store may time out meanwhile.
    await withRetries(() => applyDefinitions(rt!), 8);
    const app = createHttpApp({
      log,
      registry: rt.registry,
      bodyLimitBytes: config.BODY_LIMIT_BYTES,
      readiness: rt.readiness,
      trustProxy: config.TRUST_PROXY,
      degradable: ['kafka'],
      deadlineMs: config.HTTP_DEADLINE_MS,
      maxInFlight: config.HTTP_MAX_IN_FLIGHT,
      metricsToken: config.METRICS_TOKEN,
    });
    for (const s of o.services) await s.mount(app, rt);
    if (o.services.length > 0) mountDocs(app, rt.docs);
    finishHttpApp(app, log);
    const server = await listen(app, config.PORT, config.HOST).catch(
      (err: NodeJS.ErrnoException) => {
        throw err.code === 'EADDRINUSE'
          ? new StackError(
              `port ${config.PORT} is taken by another process; stop it or set PORT to a free port`,
            )
          : err;
      },
    );
    const workers: { name: string; stop(): Promise<void> }[] = [];
    // Shutdown order: stop taking requests, drain workers, close clients, stop the stack.
    steps.push({ name: 'http', run: () => closeServer(server) });
    steps.push({
      name: 'workers',
      run: async () => {
        await Promise.allSettled(workers.map((w) => w.stop()));
      },
    });
    const runtime = rt;
    const ownStack = stack;
    steps.push({ name: 'clients', run: () => runtime.close() });
    if (ownStack) steps.push({ name: 'stack', run: () => ownStack.stop() });
    // A worker whose start meets a transient fault (the store or broker restarting) starts
    // again rather than taking the process down; each start undoes its own partial work.
    for (const w of o.workers)
      workers.push({ name: w.name, ...(await withRetries(() => w.start(runtime), 10)) });
    const addr = server.address();
    const port = typeof addr === 'object' && addr ? addr.port : config.PORT;
    const url = `http://${config.HOST === '0.0.0.0' ? '127.0.0.1' : config.HOST}:${port}`;
    log.info(
      {
        url,
        services: o.services.map((s) => s.name),
        workers: o.workers.map((w) => w.name),
        config: redactConfig(config),
      },
      'ready',
    );
    return { rt, server, stack, url, close };
  } catch (err) {
    // Said before the (possibly long) undoing, so the cause is on record whatever happens next.
    log.error({ err }, 'start failed; stopping what was started');
    // Steps registered so far are undone; a stack started by this call stops in upStack/close.
    await close();
    await rt?.close();
    await stack?.stop();
    throw err;
  }
}

/** The composition root used by every main.ts: start, install signal handling, report failures in one line. */
export async function main(o: Parameters<typeof startProcess>[0]): Promise<void> {
  try {
    const config = o.config ?? loadConfig();
    const log = o.log ?? createLogger({ level: config.LOG_LEVEL, name: o.name });
    const telemetry = startTelemetry(config, log);
    const started = await startProcess({ ...o, config, log });
    const p = {
      ...started,
      close: async () => {
        await started.close();
        await telemetry.shutdown().catch(() => undefined);
      },
    };
    // A forced exit (second Ctrl-C, drain timeout) must not orphan the JVMs this process started.
    process.on('exit', () => p.stack?.killSync());
    installShutdown(p.close, p.rt.log, p.rt.config.SHUTDOWN_TIMEOUT_MS + 20_000);
    process.stdout.write(`\n${o.name} ready at ${p.url}  (Ctrl-C to stop)\n\n`);
  } catch (err) {
    if (err instanceof StackError || err instanceof ConfigError) {
      process.stderr.write(`error: ${err.message}\n`);
    } else {
      process.stderr.write(`error: ${(err as Error)?.message ?? String(err)}\n`);
    }
    process.exit(1);
  }
}
