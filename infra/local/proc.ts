import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { StackError } from './errors.js';

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** True when nothing listens on host:port. */
export function portFree(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, host, () => srv.close(() => resolve(true)));
  });
}

/**
 * A free port for a throw-away stack, picked at random below Linux's ephemeral range
 * (32768–60999): a port the kernel hands out for port 0 can be taken by any outgoing connection
 * of the machine before the JVM gets to bind it (seen: Kafka failing to start with "Address
 * already in use" while another stack ran). The embedded default's fixed ports are skipped.
 * Falls back to the kernel's pick after 50 tries.
 */
export async function freePort(): Promise<number> {
  const reserved = new Set([28000, 29092, 29093]);
  for (let i = 0; i < 50; i++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (!reserved.has(port) && (await portFree(port))) return port;
  }
  return kernelPort();
}

function kernelPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() =>
        addr && typeof addr === 'object' ? resolve(addr.port) : reject(new Error('no port')),
      );
    });
  });
}

/** This machine's interface addresses other than loopback (what another host could connect to). */
export function nonLoopbackAddresses(): string[] {
  return Object.entries(os.networkInterfaces()).flatMap(([name, addrs]) =>
    (addrs ?? [])
      .filter((a) => !a.internal)
      .map((a) => (a.family === 'IPv6' && a.scopeid ? `${a.address}%${name}` : a.address)),
  );
}

/** True when a TCP connection to host:port is accepted. */
export function accepts(host: string, port: number, timeoutMs = 1_000): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host, port, timeout: timeoutMs });
    const done = (ok: boolean) => {
      s.destroy();
      resolve(ok);
    };
    s.once('connect', () => done(true));
    s.once('timeout', () => done(false));
    s.once('error', () => done(false));
  });
}

/** The non-loopback addresses of this machine on which `port` accepts connections. */
export async function exposedOn(port: number): Promise<string[]> {
  const addrs = nonLoopbackAddresses();
  const open = await Promise.all(addrs.map((a) => accepts(a, port)));
  return addrs.filter((_, i) => open[i]);
}

export async function assertPortFree(port: number, what: string, envVar: string): Promise<void> {
  if (!(await portFree(port))) {
    throw new StackError(
      `port ${port} (${what}) is taken by another process; stop it or set ${envVar} to a free port`,
    );
  }
}

export interface JavaProcess {
  pid: number;
  logFile: string;
  /** Where this process's lines start in `logFile` (earlier runs may have written to it). */
  logStart: number;
  /** Resolves with the exit code once the process has ended. */
  exited: Promise<number | null>;
}

/**
 * What an owned JVM is started through: a shell that puts a watcher in the background, then
 * becomes the JVM (`exec`, so the pid is the JVM's). The watcher reads its stdin, a pipe from
 * this process, until it closes, which happens when this process ends however it ends (a
 * SIGKILL too); it then sends the JVM SIGTERM, and SIGKILL if it still runs 20 s later. The
 * watcher stays in the JVM's process group: stopping the group stops it too, and while it waits
 * the group keeps the JVM's pid from being reused.
 */
const WATCHED = [
  // A background list's stdin is /dev/null in sh: the watcher reads the pipe as fd 3.
  'exec 3<&0;',
  '{ read x <&3; kill -TERM $$ 2>/dev/null; i=0;',
  'while kill -0 $$ 2>/dev/null && [ $i -lt 20 ]; do sleep 1; i=$((i+1)); done;',
  'kill -KILL $$ 2>/dev/null; } &',
  'exec java "$@" </dev/null 3<&-',
].join(' ');

/**
 * Starts a JVM in its own process group so a terminal Ctrl-C reaches our Node process first
 * and the stack is stopped in order (services drain before the broker goes away). Unless
 * `outlive` (`npm run infra:up`, whose stack runs on after it), the JVM watches this process
 * and stops when it ends (`WATCHED`).
 */
export function spawnJava(
  args: string[],
  logFile: string,
  cwd: string,
  outlive = false,
): JavaProcess {
  fs.mkdirSync(path.dirname(logFile), { recursive: true });
  const fd = fs.openSync(logFile, 'a');
  const logStart = fs.fstatSync(fd).size;
  const child = outlive
    ? spawn('java', args, { cwd, detached: true, stdio: ['ignore', fd, fd] })
    : spawn('sh', ['-c', WATCHED, 'sh', ...args], { cwd, detached: true, stdio: ['pipe', fd, fd] });
  fs.closeSync(fd);
  child.unref();
  // The watcher's pipe is held open for this process's life without keeping it alive.
  const watch = child.stdin as net.Socket | null;
  watch?.on('error', () => undefined);
  watch?.unref();
  if (child.pid === undefined) throw new StackError(`could not start java (${args.at(-1)})`);
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => {
      watch?.destroy();
      resolve(code);
    });
    child.once('error', () => resolve(-1));
  });
  return { pid: child.pid, logFile, logStart, exited };
}

/** SIGTERM the process group, then SIGKILL after `graceMs` if it is still there. */
export async function stopPid(pid: number, graceMs = 15_000): Promise<void> {
  const signal = (sig: NodeJS.Signals) => {
    try {
      process.kill(-pid, sig);
    } catch {
      try {
        process.kill(pid, sig);
      } catch {
        /* already gone */
      }
    }
  };
  if (!isAlive(pid)) return;
  signal('SIGTERM');
  const deadline = Date.now() + graceMs;
  while (isAlive(pid) && Date.now() < deadline) await delay(100);
  if (isAlive(pid)) {
    signal('SIGKILL');
    while (isAlive(pid)) await delay(50);
  }
}

export function tail(file: string, lines = 5): string {
  try {
    return fs.readFileSync(file, 'utf8').trim().split('\n').slice(-lines).join(' | ');
  } catch {
    return '';
  }
}

/** Polls `probe` until it returns true; fails fast when the process dies or `signal` aborts. */
export async function waitReady(
  what: string,
  proc: JavaProcess | undefined,
  probe: () => Promise<boolean>,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<void> {
  let dead = false;
  void proc?.exited.then(() => {
    dead = true;
  });
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    signal?.throwIfAborted();
    if (dead) {
      throw new StackError(
        `${what} exited during start-up; see ${proc?.logFile} (last lines: ${tail(proc?.logFile ?? '', 3).slice(0, 300)})`,
      );
    }
    if (await probe().catch(() => false)) return;
    await delay(200);
  }
  throw new StackError(
    `${what} did not become ready within ${Math.round(timeoutMs / 1000)} s; see ${proc?.logFile ?? 'its log'}`,
  );
}
