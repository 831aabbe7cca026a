import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { StackError } from './errors.js';
import { ensureJars } from './fetch.js';
import { launchKafka, waitKafka, kafkaReady, kafkaVersion } from './kafka.js';
import { launchDynamo, waitDynamo, dynamoReady, dynamoVersion } from './dynamodb.js';
import { assertPortFree, exposedOn, freePort, isAlive, stopPid, type JavaProcess } from './proc.js';
import { stackPaths, type StackPaths } from './paths.js';

export interface StackOptions {
  /** persistent: `.svc/` data, pid files, reusable across starts. ephemeral: temp dir, in-memory DynamoDB, random ports. */
  mode: 'persistent' | 'ephemeral';
  kafkaPort?: number;
  kafkaControllerPort?: number;
  dynamoPort?: number;
  readyTimeoutMs?: number;
  /** Kafka's `group.initial.rebalance.delay.ms` (kafka.ts; default 3 s, as Kafka's). */
  kafkaInitialRebalanceDelayMs?: number;
  log?: (msg: string) => void;
  paths?: StackPaths;
  /**
   * The JVMs started run on after this process ends (`npm run infra:up`). Otherwise they watch
   * this process and stop when it ends, however it ends (proc.ts, `spawnJava`).
   */
  outlive?: boolean;
  /** Aborts the start-up: what it started is stopped and the call rejects. */
  signal?: AbortSignal;
}

export interface ComponentInfo {
  pid: number;
  port: number;
  logFile: string;
  version: string | undefined;
  /** True when this call started it (and `stop()` will stop it); false when reused. */
  started: boolean;
}

export interface StackHandle {
  kafkaBrokers: string;
  dynamoEndpoint: string;
  kafka: ComponentInfo;
  dynamodb: ComponentInfo;
  /** Stops what this handle started; idempotent. */
  stop(): Promise<void>;
}

interface PidRecord {
  pid: number;
  port: number;
  logFile: string;
}

type Name = 'kafka' | 'dynamodb';
const label: Record<Name, string> = { kafka: 'Kafka', dynamodb: 'DynamoDB Local' };

function pidFile(runDir: string, name: Name) {
  return path.join(runDir, `${name}.pid`);
}

export function readPid(runDir: string, name: Name): PidRecord | undefined {
  try {
    return JSON.parse(fs.readFileSync(pidFile(runDir, name), 'utf8')) as PidRecord;
  } catch {
    return undefined;
  }
}

const probe: Record<Name, (port: number) => Promise<boolean>> = {
  kafka: (port) => kafkaReady([`127.0.0.1:${port}`]),
  dynamodb: (port) => dynamoReady(`http://127.0.0.1:${port}`),
};

const version: Record<Name, (logFile: string) => string | undefined> = {
  kafka: kafkaVersion,
  dynamodb: dynamoVersion,
};

/** A component left running by an earlier start: reuse it if it answers, else say why not. */
async function reuse(
  runDir: string,
  name: Name,
  log: (m: string) => void,
  signal: AbortSignal | undefined,
): Promise<ComponentInfo | undefined> {
  const rec = readPid(runDir, name);
  if (!rec) return undefined;
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    signal?.throwIfAborted();
    // Gone, or going while we wait (its owner just ended and it stops with it).
    if (!isAlive(rec.pid)) {
      log(`${label[name]}: removing stale pid file (pid ${rec.pid} is gone)`);
      fs.rmSync(pidFile(runDir, name), { force: true });
      return undefined;
    }
    if (await probe[name](rec.port)) {
      // Started before DynamoDB Local was bound to loopback: it must not stay open to the network.
      const exposed = name === 'dynamodb' ? await exposedOn(rec.port) : [];
      if (exposed.length > 0)
        throw new StackError(
          `${label[name]} from an earlier start (pid ${rec.pid}) accepts connections on ${exposed[0]} port ${rec.port}, not only on loopback; run \`npm run infra:down\` and start again`,
        );
      log(`${label[name]}: reusing the running instance (pid ${rec.pid}, port ${rec.port})`);
      return { ...rec, version: version[name](rec.logFile), started: false };
    }
    await new Promise((r) => setTimeout(r, 300));
  }
  throw new StackError(
    `${label[name]} from an earlier start (pid ${rec.pid}) is running but not answering on port ${rec.port}; run \`npm run infra:down\` and start again`,
  );
}

export async function upStack(opts: StackOptions): Promise<StackHandle> {
  const log = opts.log ?? (() => undefined);
  const persistent = opts.mode === 'persistent';
  const base = opts.paths ?? stackPaths();
  const work = persistent ? base.root : fs.mkdtempSync(path.join(os.tmpdir(), 'svc-stack-'));
  const runDir = persistent ? base.run : path.join(work, 'run');
  const logs = persistent ? base.logs : path.join(work, 'logs');
  fs.mkdirSync(runDir, { recursive: true });
  const timeout = opts.readyTimeoutMs ?? 60_000;

  const startedProcs: JavaProcess[] = [];
  const stopStarted = async () => {
    await Promise.allSettled(startedProcs.map((p) => stopPid(p.pid)));
    for (const name of ['kafka', 'dynamodb'] as const) {
      const rec = readPid(runDir, name);
      if (rec && startedProcs.some((p) => p.pid === rec.pid))
        fs.rmSync(pidFile(runDir, name), { force: true });
    }
    if (!persistent) fs.rmSync(work, { recursive: true, force: true });
  };

  try {
    // Fetch before anything starts, so a missing Maven or network leaves nothing running.
    ensureJars('kafka', base.jars.kafka, log);
    ensureJars('dynamodb', base.jars.dynamodb, log);
    opts.signal?.throwIfAborted();
    // Kafka and DynamoDB start side by side; when one fails, the other stops waiting.
    const failed = new AbortController();
    const signal = opts.signal ? AbortSignal.any([opts.signal, failed.signal]) : failed.signal;
    let firstFailure: unknown;

    const start = async (name: Name): Promise<ComponentInfo> => {
      const existing = persistent ? await reuse(runDir, name, log, signal) : undefined;
      if (existing) return existing;
      const logFile = path.join(logs, `${name}.log`);
      let port: number;
      let proc: JavaProcess;
      if (name === 'kafka') {
        port = opts.kafkaPort ?? (persistent ? 29092 : await freePort());
        const controllerPort =
          opts.kafkaControllerPort ?? (persistent ? port + 1 : await freePort());
        await assertPortFree(port, 'Kafka broker', 'SVC_KAFKA_PORT');
        await assertPortFree(controllerPort, 'Kafka controller', 'SVC_KAFKA_CONTROLLER_PORT');
        proc = launchKafka({
          jarsDir: base.jars.kafka,
          dataDir: persistent ? base.data.kafka : path.join(work, 'kafka'),
          logFile,
          port,
          controllerPort,
          outlive: opts.outlive ?? false,
          ...(opts.kafkaInitialRebalanceDelayMs === undefined
            ? {}
            : { initialRebalanceDelayMs: opts.kafkaInitialRebalanceDelayMs }),
        });
      } else {
        port = opts.dynamoPort ?? (persistent ? 28000 : await freePort());
        await assertPortFree(port, 'DynamoDB Local', 'SVC_DYNAMODB_PORT');
        proc = launchDynamo({
          jarsDir: base.jars.dynamodb,
          dbPath: persistent ? base.data.dynamodb : undefined,
          logFile,
          port,
          cwd: work,
          outlive: opts.outlive ?? false,
        });
      }
      startedProcs.push(proc);
      fs.writeFileSync(pidFile(runDir, name), JSON.stringify({ pid: proc.pid, port, logFile }));
      log(`${label[name]}: starting (pid ${proc.pid}, port ${port}, log ${logFile})`);
      if (name === 'kafka') await waitKafka(proc, [`127.0.0.1:${port}`], timeout, signal);
      else await waitDynamo(proc, `http://127.0.0.1:${port}`, timeout, signal);
      const info = { pid: proc.pid, port, logFile, version: version[name](logFile), started: true };
      log(`${label[name]} ${info.version ?? ''} ready on 127.0.0.1:${port}`);
      return info;
    };

    const started = (name: Name) =>
      start(name).catch((err: unknown) => {
        firstFailure ??= err;
        failed.abort();
        throw err;
      });
    const [k, d] = await Promise.allSettled([started('kafka'), started('dynamodb')]);
    if (k.status === 'rejected' || d.status === 'rejected') throw firstFailure;
    let stopped = false;
    return {
      kafkaBrokers: `127.0.0.1:${k.value.port}`,
      dynamoEndpoint: `http://127.0.0.1:${d.value.port}`,
      kafka: k.value,
      dynamodb: d.value,
      stop: async () => {
        if (stopped) return;
        stopped = true;
        await stopStarted();
      },
    };
  } catch (err) {
    await stopStarted();
    throw err;
  }
}

/** Stops whatever the pid files name (`npm run infra:down`). */
export async function downStack(paths = stackPaths(), log: (m: string) => void = () => undefined) {
  for (const name of ['kafka', 'dynamodb'] as const) {
    const rec = readPid(paths.run, name);
    if (!rec) {
      log(`${label[name]}: not running`);
      continue;
    }
    if (isAlive(rec.pid)) {
      log(`${label[name]}: stopping pid ${rec.pid}`);
      await stopPid(rec.pid);
    } else log(`${label[name]}: pid ${rec.pid} already gone`);
    fs.rmSync(pidFile(paths.run, name), { force: true });
  }
}

export async function statusStack(paths = stackPaths()) {
  const out: Record<Name, string> = { kafka: '', dynamodb: '' };
  for (const name of ['kafka', 'dynamodb'] as const) {
    const rec = readPid(paths.run, name);
    if (!rec) out[name] = 'stopped';
    else if (!isAlive(rec.pid)) out[name] = `stale pid file (pid ${rec.pid} is gone)`;
    else {
      const ready = await probe[name](rec.port);
      out[name] =
        `${ready ? 'ready' : 'not answering'} (pid ${rec.pid}, port ${rec.port}, version ${version[name](rec.logFile) ?? '?'}, log ${rec.logFile})`;
    }
  }
  return out;
}
