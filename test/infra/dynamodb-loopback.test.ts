import fs from 'node:fs';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dynamoReady, launchDynamo, waitDynamo } from '../../infra/local/dynamodb.js';
import { StackError } from '../../infra/local/errors.js';
import { stackPaths } from '../../infra/local/paths.js';
import {
  exposedOn,
  freePort,
  isAlive,
  nonLoopbackAddresses,
  stopPid,
  type JavaProcess,
} from '../../infra/local/proc.js';

/**
 * DynamoDB Local has no authentication, so whoever reaches its port owns every table. The
 * embedded one must answer on loopback and refuse connections to any other address of this
 * machine, including after the JVM is killed and started again (what the fault tests do).
 */

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-ddb-loopback-'));
const jarsDir = stackPaths().jars.dynamodb;
const endpoint = (port: number) => `http://127.0.0.1:${port}`;

/** The addresses another host could use; none means this test cannot show anything. */
function outsideAddresses(): string[] {
  const addrs = nonLoopbackAddresses();
  if (addrs.length === 0)
    throw new Error(
      'this machine has no non-loopback network address, so this test cannot show that DynamoDB Local is unreachable from the network; run it on a machine with a network interface',
    );
  return addrs;
}

/** Connects to addr:port from addr itself; resolves with 'connected' or the error code. */
function connectFrom(addr: string, port: number): Promise<string> {
  return new Promise((resolve) => {
    const s = net.connect({
      host: addr,
      port,
      // A scoped (link-local) address picks its own source; the others are the source too.
      ...(addr.includes('%') ? {} : { localAddress: addr }),
      timeout: 2_000,
    });
    const done = (r: string) => {
      s.destroy();
      resolve(r);
    };
    s.once('connect', () => done('connected'));
    s.once('timeout', () => done('timeout'));
    s.once('error', (err: NodeJS.ErrnoException) => done(err.code ?? err.message));
  });
}

let port = 0;
let proc: JavaProcess;
/**
 * Starts DynamoDB Local on `port`. Another process of the suite may take a port picked free
 * before the JVM binds it: the launcher then exits and the start is tried again on a new port
 * (at the first start only; the restart must come back on the same port).
 */
const start = async (tries = 1) => {
  for (let i = 1; ; i++) {
    proc = launchDynamo({
      jarsDir,
      dbPath: undefined,
      logFile: path.join(tmp, 'dynamodb.log'),
      port,
      cwd: tmp,
    });
    try {
      await waitDynamo(proc, endpoint(port), 90_000);
      return;
    } catch (err) {
      await stopPid(proc.pid);
      if (i >= tries || !(err instanceof StackError)) throw err;
      port = await freePort();
    }
  }
};

/** A control: a server on every interface, which the same probes must reach. */
const wildcard = net.createServer((s) => s.destroy());

beforeAll(async () => {
  port = await freePort();
  await start(3);
  await new Promise<void>((r) => wildcard.listen(0, r));
}, 120_000);

afterAll(async () => {
  await stopPid(proc.pid);
  await new Promise((r) => wildcard.close(r));
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe('embedded DynamoDB Local listens on loopback only', () => {
  it('the probes reach a server bound to every interface on each outside address', async () => {
    const wport = (wildcard.address() as AddressInfo).port;
    for (const addr of outsideAddresses()) expect(await connectFrom(addr, wport)).toBe('connected');
    expect((await exposedOn(wport)).sort()).toEqual(outsideAddresses().sort());
  });

  it('answers on 127.0.0.1 and refuses connections on every other address', async () => {
    expect(await dynamoReady(endpoint(port))).toBe(true);
    for (const addr of outsideAddresses())
      expect({ addr, result: await connectFrom(addr, port) }).toEqual({
        addr,
        result: 'ECONNREFUSED',
      });
    expect(await exposedOn(port)).toEqual([]);
  });

  it('the pid is the JVM serving the port; killed and started again, it is still loopback-only', async () => {
    process.kill(proc.pid, 'SIGSTOP');
    try {
      const stalled = await Promise.race([
        dynamoReady(endpoint(port)),
        new Promise((r) => setTimeout(() => r('no answer'), 2_000)),
      ]);
      expect(stalled).toBe('no answer');
    } finally {
      process.kill(proc.pid, 'SIGCONT');
    }
    expect(await dynamoReady(endpoint(port))).toBe(true);

    const old = proc.pid;
    process.kill(old, 'SIGKILL');
    await expect.poll(() => isAlive(old), { timeout: 10_000 }).toBe(false);
    await start();
    expect(proc.pid).not.toBe(old);
    expect(await dynamoReady(endpoint(port))).toBe(true);
    for (const addr of outsideAddresses())
      expect(await connectFrom(addr, port)).toBe('ECONNREFUSED');
  }, 120_000);
});
