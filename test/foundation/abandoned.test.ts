import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { abandonedBy } from '../../shared/http/locals.js';
import { closeServer, createHttpApp, finishHttpApp, listen } from '../../shared/http/server.js';

/**
 * `abandonedBy` over real HTTP: the signal a handler hands to its change aborts when the caller
 * hangs up before the answer, or when the deadline answered 503 first; never for a request that
 * was answered. A caller that hung up is not logged as a failed request.
 */

let server: Server;
let base: string;
const lines: string[] = [];
/** What each held request's signal said once released: aborted or not. */
const seen = new Map<string, boolean>();
const release = new Map<string, () => void>();

beforeAll(async () => {
  const log = pino({ level: 'debug' }, { write: (l: string) => lines.push(l) });
  const app = createHttpApp({
    log,
    registry: new Registry(),
    bodyLimitBytes: 1024,
    readiness: {},
    deadlineMs: 300,
  });
  app.post('/api/held/:id', async (req, res) => {
    const signal = abandonedBy(res);
    const wait = req.params.id.startsWith('short') ? 50 : 60_000;
    await new Promise<void>((r) => {
      release.set(req.params.id, r);
      setTimeout(r, wait);
    });
    seen.set(req.params.id, signal.aborted);
    if (signal.aborted) throw new Error('the change would be skipped here');
    res.status(201).json({ id: req.params.id });
  });
  finishHttpApp(app, log);
  server = await listen(app, 0, '127.0.0.1');
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  for (const r of release.values()) r();
  await closeServer(server);
});

describe('abandonedBy', () => {
  it('aborts once the caller hangs up before the answer, and does not log it as a failure', async () => {
    const hangUp = new AbortController();
    const pending = fetch(`${base}/api/held/gone`, { method: 'POST', signal: hangUp.signal });
    await expect.poll(() => release.has('gone')).toBe(true);
    hangUp.abort();
    await expect(pending).rejects.toThrow();
    await new Promise((r) => setTimeout(r, 100)); // the server sees the connection close
    release.get('gone')!();
    await expect.poll(() => seen.get('gone')).toBe(true);
    await new Promise((r) => setTimeout(r, 50));
    const about = lines.filter((l) => l.includes('/api/held/gone'));
    expect(about.some((l) => l.includes('the caller was gone before the answer'))).toBe(true);
    expect(about.some((l) => l.includes('request failed'))).toBe(false);
  });

  it('aborts once the deadline answered 503', async () => {
    const r = await fetch(`${base}/api/held/late`, { method: 'POST' });
    expect(r.status).toBe(503);
    release.get('late')!();
    await expect.poll(() => seen.get('late')).toBe(true);
  });

  it('does not abort for a request answered in time', async () => {
    const r = await fetch(`${base}/api/held/short-1`, { method: 'POST' });
    expect(r.status).toBe(201);
    expect(seen.get('short-1')).toBe(false);
  });
});
