import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectRoot, stackPaths } from '../../infra/local/paths.js';
import { freePort } from '../../infra/local/proc.js';
import { readPid } from '../../infra/local/stack.js';
import { createTenant, Receiver, type Tenant } from './harness.js';

/**
 * `npm start` stopped at every instant of its start-up: run as a user runs it (npm, then tsx,
 * then the service), on the embedded stack in a SVC_HOME of this file's own (the project's
 * jars linked in), SIGTERM sent to npm right after spawn, while Kafka and DynamoDB Local
 * start, at the first answer of /readyz, and once ready just after a consent was accepted.
 * Each time it must exit 0 leaving no process and no pid file behind; the accepted consent's
 * webhook must arrive after a restart at the latest. Then SIGKILL of the service process: the
 * JVMs must stop by themselves. And `npm run infra:up`'s stack must outlive its command.
 */

const home = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-shutdown-'));
const paths = stackPaths(home);
const admin = `shutdown-admin-${Math.random().toString(36).slice(2)}-token`;
const log = (m: string) => process.stdout.write(`[shutdown] ${m}\n`);
let env: Record<string, string>;
let port = 0;
const receiver = new Receiver();
let tenant: Tenant;
/** Every JVM pid any start printed, and each run's child, to check and (at the end) to clean. */
const jvmPids = new Set<number>();
const children: ChildProcess[] = [];

beforeAll(async () => {
  const jars = stackPaths().jars;
  fs.mkdirSync(path.dirname(paths.jars.kafka), { recursive: true });
  fs.symlinkSync(jars.kafka, paths.jars.kafka);
  fs.symlinkSync(jars.dynamodb, paths.jars.dynamodb);
  port = await freePort();
  env = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? home,
    NODE_ENV: 'development',
    LOG_LEVEL: 'info',
    PORT: String(port),
    HOST: '127.0.0.1',
    SVC_HOME: home,
    SVC_KAFKA_PORT: String(await freePort()),
    SVC_KAFKA_CONTROLLER_PORT: String(await freePort()),
    SVC_DYNAMODB_PORT: String(await freePort()),
    SVC_ADMIN_TOKEN: admin,
    SVC_ENCRYPTION_KEY: Buffer.alloc(32, 5).toString('base64'),
    WEBHOOK_ALLOW_LOOPBACK_SANDBOX: 'true',
    // This machine's cores are shared with other stacks: a slow store is not what is tested.
    HTTP_DEADLINE_MS: '10000',
  };
  await receiver.start();
});

afterAll(async () => {
  // Whatever a failed case left: its process, then the JVMs' process groups.
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const pid of jvmPids)
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  await receiver.stop();
  fs.rmSync(home, { recursive: true, force: true });
}, 60_000);

/** One `npm start`: its output, the JVM pids it printed, and its end. */
class Start {
  readonly child: ChildProcess;
  out = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor() {
    this.child = spawn('npm', ['start'], {
      cwd: projectRoot,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(this.child);
    const take = (c: Buffer) => {
      this.out += c.toString();
      for (const m of this.out.matchAll(/(?:Kafka|DynamoDB Local): starting \(pid (\d+)/g))
        jvmPids.add(Number(m[1]));
    };
    this.child.stdout!.on('data', take);
    this.child.stderr!.on('data', take);
    this.exited = new Promise((resolve) =>
      this.child.once('exit', (code, signal) => resolve({ code, signal })),
    );
    // Its processes (sh, tsx, the service, the JVMs), noted while it runs, checked at the end.
    const note = setInterval(() => {
      for (const pid of descendants(this.child.pid!)) this.tree.add(pid);
    }, 100);
    void this.exited.then(() => clearInterval(note));
  }

  readonly tree = new Set<number>();

  /** The service process: the JVMs' parent. */
  get service(): number {
    return parentOf(this.jvms[0]!);
  }

  /** The JVM pids this start printed. */
  get jvms(): number[] {
    return [...this.out.matchAll(/(?:Kafka|DynamoDB Local): starting \(pid (\d+)/g)].map((m) =>
      Number(m[1]),
    );
  }

  async waitFor(what: string | (() => Promise<boolean>), timeoutMs = 120_000): Promise<void> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      if (typeof what === 'string' ? this.out.includes(what) : await what()) return;
      if (this.child.exitCode !== null) throw new Error(`exited early:\n${this.out.slice(-3000)}`);
      if (Date.now() > until) throw new Error(`no "${String(what)}" in:\n${this.out.slice(-3000)}`);
      await delay(50);
    }
  }

  /** SIGTERM, then its exit (at most 60 s: the process forces its own exit after 35 s). */
  async term(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    this.child.kill('SIGTERM');
    const r = await Promise.race([this.exited, delay(60_000).then(() => undefined)]);
    if (!r) throw new Error(`still running 60 s after SIGTERM:\n${this.out.slice(-3000)}`);
    return r;
  }
}

function parentOf(pid: number): number {
  // /proc/<pid>/stat: "pid (comm) state ppid …"; comm may hold spaces, not ")".
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

/** The processes below `root`, at this moment. */
function descendants(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const d of fs.readdirSync('/proc').filter((x) => /^\d+$/.test(x))) {
    try {
      const ppid = parentOf(Number(d));
      children.set(ppid, [...(children.get(ppid) ?? []), Number(d)]);
    } catch {
      /* ended meanwhile */
    }
  }
  const out: number[] = [];
  for (let queue = [root]; queue.length > 0;) {
    const next = children.get(queue.pop()!) ?? [];
    out.push(...next);
    queue.push(...next);
  }
  return out;
}

/**
 * Whether `pid` runs: a zombie does not (an ended watcher whose parent, the JVM, never reaps
 * it waits as one until init does).
 */
function running(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat[stat.lastIndexOf(')') + 2] !== 'Z';
  } catch {
    return false;
  }
}

/** A process as `ps` would show it: pid, state, parent, command line. */
function ps(pid: number): string {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
    return `${pid} ${stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3)} ppid ${parentOf(pid)} ${cmd.slice(0, 120)}`;
  } catch {
    return `${pid} (gone)`;
  }
}

/** Processes whose command line names this file's SVC_HOME (the JVMs and their watchers). */
function processesOfHome(): string[] {
  const found: string[] = [];
  for (const pid of fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
      if (cmd.includes(home)) found.push(`${pid} ${cmd.slice(0, 160)}`);
    } catch {
      /* ended meanwhile */
    }
  }
  return found;
}

/** Nothing of `s` left: the process, the JVMs it printed, any process of the home, pid files. */
function expectNothingLeft(s: Start): void {
  expect(running(s.child.pid!)).toBe(false);
  expect([...s.tree].filter(running).map(ps)).toEqual([]);
  expect(s.jvms.filter(running)).toEqual([]);
  expect(processesOfHome()).toEqual([]);
  expect(readPid(paths.run, 'kafka')).toBeUndefined();
  expect(readPid(paths.run, 'dynamodb')).toBeUndefined();
}

async function readyz(): Promise<{ status: number; body: { status?: string } } | undefined> {
  try {
    const r = await fetch(`http://127.0.0.1:${port}/readyz`, {
      signal: AbortSignal.timeout(2_000),
    });
    return { status: r.status, body: (await r.json()) as { status?: string } };
  } catch {
    return undefined;
  }
}

let accepted: string | undefined;

describe('npm start stopped at any instant of its start-up', () => {
  it('right after spawn: nothing left', async () => {
    const s = new Start();
    const r = await s.term();
    // Before the entry's first line runs (npm, tsx, Node loading), the default action ends it.
    expect(r.code === 0 || r.signal === 'SIGTERM', JSON.stringify(r)).toBe(true);
    expectNothingLeft(s);
  });

  it('while Kafka and DynamoDB Local start: exit 0, both JVMs stopped', async () => {
    const s = new Start();
    await s.waitFor('Kafka: starting (pid');
    const r = await s.term();
    log(`stack start: ${s.jvms.length} JVM(s) had started`);
    expect(r, s.out.slice(-2000)).toEqual({ code: 0, signal: null });
    expect(s.jvms.length).toBeGreaterThan(0);
    expectNothingLeft(s);
  }, 120_000);

  it('at the first answer of /readyz (503 starting, workers joining): exit 0, nothing left', async () => {
    const s = new Start();
    let first: Awaited<ReturnType<typeof readyz>>;
    await s.waitFor(async () => (first = await readyz()) !== undefined, 180_000);
    const r = await s.term();
    expect(first).toEqual({ status: 503, body: expect.objectContaining({ status: 'starting' }) });
    expect(s.out).not.toContain(' ready at http');
    expect(r, s.out.slice(-2000)).toEqual({ code: 0, signal: null });
    expectNothingLeft(s);
  }, 240_000);

  it('ready, a consent accepted just before: exit 0, nothing left', async () => {
    const s = new Start();
    await s.waitFor(' ready at http', 180_000);
    expect((await readyz())?.status).toBe(200);
    tenant = await createTenant(`http://127.0.0.1:${port}`, admin, receiver, 'shutdown');
    // A client retries a 503 (a store slow on this busy machine): only a 201 counts as accepted.
    let res: Response | undefined;
    for (let i = 0; i < 5 && res?.status !== 201; i++) {
      if (res) await delay(1_000);
      res = await fetch(`http://127.0.0.1:${port}/api/v1/consents`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tenant.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          userId: 'u-stop',
          email: 'u-stop@example.com',
          consents: { analytics: true, marketing: false },
        }),
      });
    }
    expect(res!.status, await res!.clone().text()).toBe(201);
    accepted = ((await res!.json()) as { referenceId: string }).referenceId;
    const r = await s.term();
    const before = receiver.deliveries.some((d) => d.referenceId === accepted);
    log(`consent ${accepted}: webhook ${before ? 'arrived before the stop' : 'not yet sent'}`);
    expect(r, s.out.slice(-2000)).toEqual({ code: 0, signal: null });
    expectNothingLeft(s);
  }, 240_000);

  it('restarted, the accepted consent is delivered; SIGKILLed, the JVMs stop by themselves', async () => {
    expect(accepted).toBeDefined();
    const s = new Start();
    await s.waitFor(' ready at http', 180_000);
    await s.waitFor(
      async () =>
        receiver.deliveries.some(
          (d) => d.referenceId === accepted && d.type === 'consent.granted' && d.status === 200,
        ),
      90_000,
    );
    const jvms = s.jvms;
    expect(jvms.length).toBe(2);
    expect(jvms.every(running)).toBe(true);
    // The service process, not npm (npm would leave it running: nothing forwards a SIGKILL).
    const service = s.service;
    process.kill(service, 'SIGKILL');
    await s.exited;
    const t0 = Date.now();
    while ((jvms.some(running) || processesOfHome().length > 0) && Date.now() - t0 < 30_000)
      await delay(200);
    log(`SIGKILL: JVMs gone ${Date.now() - t0} ms after their parent`);
    expect(jvms.filter(running)).toEqual([]);
    expect(processesOfHome()).toEqual([]);
  }, 300_000);

  it('npm run infra:up: its stack outlives the command (until infra:down)', async () => {
    const cli = (cmd: string) =>
      spawnSync(
        process.execPath,
        ['--import', 'tsx', path.join(projectRoot, 'infra', 'local', 'cli.ts'), cmd],
        {
          cwd: projectRoot,
          env,
          encoding: 'utf8',
          timeout: 150_000,
        },
      );
    const up = cli('up');
    expect(up.status, up.stdout + up.stderr).toBe(0);
    // Long enough for JVMs that watched the command to have been stopped.
    await delay(3_000);
    const pids = [readPid(paths.run, 'kafka')?.pid, readPid(paths.run, 'dynamodb')?.pid];
    for (const pid of pids) if (pid) jvmPids.add(pid);
    expect(pids.every((p) => p !== undefined && running(p))).toBe(true);
    const down = cli('down');
    expect(down.status, down.stdout + down.stderr).toBe(0);
    expect(pids.filter((p) => running(p!))).toEqual([]);
  }, 300_000);
});
