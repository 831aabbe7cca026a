import type { Server } from 'node:http';
import { StackError } from '../infra/local/errors.js';
import {
  ConfigError,
  loadConfig,
  redactConfig,
  wantsEmbeddedStack,
  type BaseConfig,
} from '../shared/config.js';
import { mountDocs } from '../shared/http/openapi.js';
import { closeServer, createHttpApp, finishHttpApp, listen } from '../shared/http/server.js';
import { createLogger, type Logger } from '../shared/logger.js';
import { applyDefinitions, createRuntime } from './compose.js';
import type { ServiceModule, WorkerModule } from '../shared/module.js';
import type { Runtime } from '../shared/runtime.js';
import { installShutdown, makeCloser, type ShutdownStep } from '../shared/shutdown.js';
import { startTelemetry } from '../shared/telemetry.js';
import { withRetries } from '../shared/backoff.js';

/**
 * Connections the kernel holds until the server accepts them (capped by net.core.somaxconn).
 * Node's 511 overflows within a fraction of a second of a busy event loop under a burst, and the
 * client's TCP stack then retries after 1, 3, 7… s.
 */
export const LISTEN_BACKLOG = 4_096;

/**
 * Hosts services and workers in one process on a Kafka and a DynamoDB it is given, on the
 * runtime built by the composition root (`createRuntime`, bin/compose.ts). It knows nothing of
 * the embedded local stack (and must not import it: the production entry `bin/serve.ts` is
 * built on this module; test/infra/prod-entry.test.ts checks its imports). `bin/process.ts`
 * adds the embedded stack as the default for `npm start` and the tools.
 */

/** Infrastructure a process started for itself, stopped when the process closes. */
export interface OwnedStack {
  stop(): Promise<void>;
  /** Last resort on a forced exit: stop it synchronously. */
  killSync(): void;
}

/** Where Kafka and DynamoDB are: the configuration with them filled in, and what was started. */
export interface Infra<S extends OwnedStack = OwnedStack> {
  config: BaseConfig;
  stack: S | undefined;
}

export type InfraResolver<S extends OwnedStack = OwnedStack> = (
  config: BaseConfig,
  log: Logger,
) => Promise<Infra<S>>;

export interface RunningProcess<S extends OwnedStack = OwnedStack> {
  rt: Runtime;
  server: Server;
  stack: S | undefined;
  url: string;
  close(): Promise<void>;
}

export interface ProcessOptions<S extends OwnedStack = OwnedStack> {
  name: string;
  services: ServiceModule[];
  workers: WorkerModule[];
  config?: BaseConfig;
  log?: Logger;
  /** Where Kafka and DynamoDB are; by default `externalInfra`, the configured ones only. */
  infra?: InfraResolver<S>;
}

/**
 * Throws a one-line ConfigError unless the configuration names a Kafka (KAFKA_BROKERS) and a
 * DynamoDB (DYNAMODB_ENDPOINT or AWS_REGION).
 */
export function requireExternalInfra(
  config: Pick<BaseConfig, 'KAFKA_BROKERS' | 'DYNAMODB_ENDPOINT' | 'AWS_REGION'>,
): void {
  if (wantsEmbeddedStack(config))
    throw new ConfigError(
      'KAFKA_BROKERS and AWS_REGION (or DYNAMODB_ENDPOINT) must be set; only npm start runs the embedded Kafka and DynamoDB Local',
    );
  if (!config.KAFKA_BROKERS)
    throw new ConfigError('KAFKA_BROKERS must be set when DYNAMODB_ENDPOINT or AWS_REGION is');
  if (!config.DYNAMODB_ENDPOINT && !config.AWS_REGION)
    throw new ConfigError('DYNAMODB_ENDPOINT or AWS_REGION must be set when KAFKA_BROKERS is');
}

/** The configured Kafka and DynamoDB, nothing started; refuses a configuration naming none. */
export function externalInfra(config: BaseConfig): Promise<Infra<never>> {
  requireExternalInfra(config);
  return Promise.resolve({ config, stack: undefined });
}

/** Builds and starts one process hosting the given services and workers. */
export async function startProcess<S extends OwnedStack = never>(
  o: ProcessOptions<S>,
): Promise<RunningProcess<S>> {
  const baseConfig = o.config ?? loadConfig();
  const log = o.log ?? createLogger({ level: baseConfig.LOG_LEVEL, name: o.name });
  const resolve: InfraResolver<S> = o.infra ?? externalInfra;
  const steps: ShutdownStep[] = [];
  const close = makeCloser(steps, log);
  let stack: S | undefined;
  let rt: Runtime | undefined;
  try {
    const infra = await resolve(baseConfig, log);
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
      lagShedMs: config.HTTP_LAG_SHED_MS,
      metricsToken: config.METRICS_TOKEN,
      publicBaseUrl: config.PUBLIC_BASE_URL,
    });
    for (const s of o.services) await s.mount(app, rt);
    if (o.services.length > 0) mountDocs(app, rt.docs);
    finishHttpApp(app, log);
    const server = await listen(app, config.PORT, config.HOST, LISTEN_BACKLOG).catch(
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

/** Runs one entry's process: start, install signal handling, report failures in one line. */
export async function main<S extends OwnedStack = never>(o: ProcessOptions<S>): Promise<void> {
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
