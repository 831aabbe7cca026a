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
import { installShutdown, Lifecycle } from '../shared/shutdown.js';
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

/**
 * Infrastructure a process started for itself, stopped when the process closes (and, for the
 * embedded stack, by itself should the process die without closing it).
 */
export interface OwnedStack {
  stop(): Promise<void>;
}

/** Where Kafka and DynamoDB are: the configuration with them filled in, and what was started. */
export interface Infra<S extends OwnedStack = OwnedStack> {
  config: BaseConfig;
  stack: S | undefined;
}

/** `signal` aborts a start of infrastructure under way (a stop during start-up). */
export type InfraResolver<S extends OwnedStack = OwnedStack> = (
  config: BaseConfig,
  log: Logger,
  signal: AbortSignal,
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
  /** The start-up and stop sequence to join (`main` passes the one its signals stop). */
  lifecycle?: Lifecycle;
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

/**
 * Builds and starts one process hosting the given services and workers. Each part registers
 * its stop step on the lifecycle as soon as it exists, so a stop at any instant of the start-up
 * (`close`, or `main`'s signal) undoes exactly what was started, in reverse order; a failed
 * start undoes it too, then rejects.
 */
export async function startProcess<S extends OwnedStack = never>(
  o: ProcessOptions<S>,
): Promise<RunningProcess<S>> {
  const baseConfig = o.config ?? loadConfig();
  const log = o.log ?? createLogger({ level: baseConfig.LOG_LEVEL, name: o.name });
  const resolve: InfraResolver<S> = o.infra ?? externalInfra;
  const life = o.lifecycle ?? new Lifecycle(log);
  let started = false;
  try {
    const { config, stack } = await life.step(
      'infrastructure',
      (signal) => resolve(baseConfig, log, signal),
      (infra) => infra.stack?.stop(),
    );
    const rt = await life.step(
      'clients',
      () => createRuntime(config, log),
      (made) => made.close(),
    );
    // Tables and topics are created once; a busy or just-started store may time out meanwhile.
    await life.step('definitions', (signal) => withRetries(() => applyDefinitions(rt), 8, signal));
    const app = createHttpApp({
      log,
      registry: rt.registry,
      bodyLimitBytes: config.BODY_LIMIT_BYTES,
      readiness: rt.readiness,
      started: () => started,
      trustProxy: config.TRUST_PROXY,
      degradable: ['kafka'],
      deadlineMs: config.HTTP_DEADLINE_MS,
      maxInFlight: config.HTTP_MAX_IN_FLIGHT,
      lagShedMs: config.HTTP_LAG_SHED_MS,
      metricsToken: config.METRICS_TOKEN,
      publicBaseUrl: config.PUBLIC_BASE_URL,
    });
    await life.step('services', async () => {
      for (const s of o.services) await s.mount(app, rt);
      if (o.services.length > 0) mountDocs(app, rt.docs);
      finishHttpApp(app, log);
    });
    // Stop order, the reverse of this: stop taking requests, drain the workers (together),
    // close the clients, stop the stack.
    const workers: { stop(): Promise<void> }[] = [];
    life.onStop('workers', async () => {
      await Promise.allSettled(workers.map((w) => w.stop()));
    });
    const server = await life.step(
      'http',
      () =>
        listen(app, config.PORT, config.HOST, LISTEN_BACKLOG).catch(
          (err: NodeJS.ErrnoException) => {
            throw err.code === 'EADDRINUSE'
              ? new StackError(
                  `port ${config.PORT} is taken by another process; stop it or set PORT to a free port`,
                )
              : err;
          },
        ),
      (srv) => closeServer(srv),
    );
    // A worker whose start meets a transient fault (the store or broker restarting) starts
    // again rather than taking the process down; each start undoes its own partial work. A
    // stop meanwhile waits for the start in flight (a consumer joining its group), then
    // stops it with the others.
    for (const w of o.workers)
      await life.step(`worker ${w.name}`, async (signal) => {
        workers.push(await withRetries(() => w.start(rt), 10, signal));
      });
    started = true;
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
    return { rt, server, stack, url, close: () => life.stop() };
  } catch (err) {
    // Said before the (possibly long) undoing, so the cause is on record whatever happens next.
    if (!life.stopping) log.error({ err }, 'start failed; stopping what was started');
    await life.stop();
    throw err;
  }
}

/**
 * Runs one entry's process: signal handling first, then the start; a failed start is one line
 * and exit 1. A signal at any instant stops what has started and exits 0 (`installShutdown`).
 */
export async function main<S extends OwnedStack = never>(o: ProcessOptions<S>): Promise<void> {
  let signalled = false;
  try {
    const config = o.config ?? loadConfig();
    const log = o.log ?? createLogger({ level: config.LOG_LEVEL, name: o.name });
    const life = new Lifecycle(log);
    installShutdown(
      () => {
        signalled = true;
        return life.stop();
      },
      log,
      config.SHUTDOWN_TIMEOUT_MS + 20_000,
    );
    await life.step(
      'telemetry',
      () => startTelemetry(config, log),
      (t) => t.shutdown().catch(() => undefined),
    );
    const p = await startProcess({ ...o, config, log, lifecycle: life });
    process.stdout.write(`\n${o.name} ready at ${p.url}  (Ctrl-C to stop)\n\n`);
  } catch (err) {
    // Stopped by a signal during start-up: the signal's handler exits once all is undone.
    if (signalled) return;
    if (err instanceof StackError || err instanceof ConfigError) {
      process.stderr.write(`error: ${err.message}\n`);
    } else {
      process.stderr.write(`error: ${(err as Error)?.message ?? String(err)}\n`);
    }
    process.exit(1);
  }
}
