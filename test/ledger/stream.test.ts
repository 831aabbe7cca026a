import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import type { Response } from 'express';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { writeNdjson } from '../../services/ledger/stream.js';
import { AppError } from '../../shared/errors.js';
import { createLogger } from '../../shared/logger.js';
import { createRegistry } from '../../shared/metrics.js';
import { closeServer, createHttpApp, finishHttpApp, listen } from '../../shared/http/server.js';

/**
 * The NDJSON writer on a real HTTP server and real sockets: it pulls records only as fast as
 * the client reads, stops pulling when the client goes away, and reports failures in-band.
 */

const log = createLogger({ level: 'silent' });
const RECORD = 'x'.repeat(64 * 1024);

/** An endless source that counts what was pulled and whether its iterator was closed. */
const endless = {
  pulled: 0,
  closed: false,
  res: undefined as Response | undefined,
  /** The writer's run: settles when it returned. */
  writing: undefined as Promise<void> | undefined,
};

let server: Server;
let base: string;

beforeAll(async () => {
  const app = createHttpApp({
    log,
    registry: createRegistry({ defaultMetrics: false }),
    bodyLimitBytes: 1024,
    readiness: {},
  });
  app.get('/endless', async (_req, res) => {
    endless.res = res;
    endless.writing = writeNdjson(res, {
      source: async function* () {
        try {
          for (;;) {
            endless.pulled++;
            yield { type: 'x', n: endless.pulled, pad: RECORD };
          }
        } finally {
          endless.closed = true;
        }
      },
      summary: (count) => ({ type: 'summary', count }),
      log,
    });
    await endless.writing;
  });
  app.get('/three', async (_req, res) => {
    await writeNdjson(res, {
      source: async function* () {
        yield* [{ n: 1 }, { n: 2 }, { n: 3 }];
      },
      summary: (count) => ({ type: 'summary', count }),
      log,
    });
  });
  app.get('/fails-midway', async (_req, res) => {
    await writeNdjson(res, {
      source: async function* () {
        yield { n: 1 };
        throw new Error('the table went away');
      },
      summary: (count) => ({ type: 'summary', count }),
      log,
    });
  });
  app.get('/fails-first', async (_req, res) => {
    await writeNdjson(res, {
      // eslint-disable-next-line require-yield -- fails before its first record on purpose
      source: async function* () {
        throw new AppError('SVC_UNAVAILABLE', 'DynamoDB is unavailable', { retryAfterS: 1 });
      },
      summary: (count) => ({ type: 'summary', count }),
      log,
    });
  });
  finishHttpApp(app, log);
  server = await listen(app, 0, '127.0.0.1');
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await closeServer(server);
});

describe('writeNdjson', () => {
  it('ends a complete stream with the summary line', async () => {
    const r = await fetch(`${base}/three`);
    expect(await r.text()).toBe('{"n":1}\n{"n":2}\n{"n":3}\n{"type":"summary","count":3}\n');
  });

  it('ends with an error line, not a summary, when the source fails midway', async () => {
    const r = await fetch(`${base}/fails-midway`);
    expect(r.status).toBe(200);
    expect(await r.text()).toBe(
      '{"n":1}\n{"type":"error","code":"SVC_INTERNAL","detail":"Internal error"}\n',
    );
  });

  it('answers problem+json when the source fails before the first line', async () => {
    const r = await fetch(`${base}/fails-first`);
    expect(r.status).toBe(503);
    expect(r.headers.get('content-type')).toMatch(/problem\+json/);
    expect(r.headers.get('retry-after')).toBe('1');
  });

  it('waits for a slow client, then stops pulling when it disconnects', async () => {
    const req = http.get(`${base}/endless`);
    const res = await new Promise<http.IncomingMessage>((resolve) => req.on('response', resolve));
    res.pause(); // the client stops reading: socket buffers fill up
    // Stalled: the writer waits for 'drain' from a socket holding bytes the kernel no longer
    // takes (the client reads nothing). A writer that ignored back-pressure would never wait
    // there; it would keep pulling.
    await vi.waitFor(
      () => {
        expect(endless.res?.writableNeedDrain).toBe(true);
        expect(endless.res!.listenerCount('drain')).toBeGreaterThan(0);
        expect(endless.res!.socket?.writableLength).toBeGreaterThan(0);
      },
      { timeout: 10_000 },
    );
    const stalled = endless.pulled;
    // Bounded by socket buffers, not by the (endless) source.
    expect(stalled * RECORD.length).toBeLessThan(64 * 1024 * 1024);

    // Reading again lets it continue.
    let received = 0;
    res.on('data', (c: Buffer) => (received += c.length));
    res.resume();
    await vi.waitFor(() => expect(endless.pulled).toBeGreaterThan(stalled + 20), {
      timeout: 10_000,
    });
    expect(received).toBeGreaterThan(0);

    // The client goes away: the writer stops and closes the source.
    res.on('error', () => undefined);
    req.destroy();
    await vi.waitFor(() => expect(endless.closed).toBe(true), { timeout: 10_000 });
    const final = endless.pulled;
    // The writer returned: nothing is left that could pull.
    await endless.writing;
    expect(endless.pulled).toBe(final);
  });
});
