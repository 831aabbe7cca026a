import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';
import { projectRoot } from '../../infra/local/paths.js';
import { LISTEN_BACKLOG } from '../../bin/host.js';

/**
 * The HTTP server's listen backlog (`LISTEN_BACKLOG`, bin/host.ts): while the event loop is busy, new
 * connections wait in the kernel's queue. Node's default of 511 overflows under a burst, and
 * the kernel then drops each further connection: its client retries only after 1, 3, 7… s, so
 * a request the admission control would refuse at once waits seconds. A server whose loop is
 * held busy for 2 s is sent 1,500 connections: with the service's default every one of them
 * completes its handshake in the kernel before the loop is free; with 511, about 512 do.
 */

const CONNECTIONS = 1_500;
let child: ChildProcess | undefined;
const sockets: net.Socket[] = [];

afterEach(() => {
  for (const s of sockets.splice(0)) s.destroy();
  child?.kill('SIGKILL');
  child = undefined;
});

/** How many of CONNECTIONS completed their handshake by the time the server's loop was free. */
async function connectedWhileBusy(backlog: number): Promise<number> {
  child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      path.join(projectRoot, 'test/helpers/busy-listener.ts'),
      String(backlog),
      '2000',
    ],
    { cwd: projectRoot, stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const port = Number((await lines.next()).value);
  let connected = 0;
  for (let i = 0; i < CONNECTIONS; i++) {
    const s = net.connect(port, '127.0.0.1', () => connected++);
    s.on('error', () => {});
    sockets.push(s);
  }
  expect((await lines.next()).value).toBe('free');
  return connected;
}

describe('HTTP listen backlog', () => {
  it('holds every connection of a burst while the event loop is busy', async () => {
    const backlog = LISTEN_BACKLOG;
    expect(backlog).toBeGreaterThan(CONNECTIONS);
    expect(await connectedWhileBusy(backlog)).toBe(CONNECTIONS);
  }, 30_000);

  it("with Node's default backlog (511) the kernel leaves the rest to the client's retries", async () => {
    expect(await connectedWhileBusy(511)).toBeLessThan(CONNECTIONS / 2);
  }, 30_000);
});
