import { spawnSync } from 'node:child_process';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeServer, createHttpApp, finishHttpApp, listen } from '../../shared/http/server.js';
import { createLogger } from '../../shared/logger.js';

/**
 * Admission control over real HTTP: with `maxInFlight` API requests in progress, the next is
 * answered 503 problem+json with Retry-After at once, before Express sees it (its handler never
 * runs; nothing is read or written); once one finishes, a request is admitted again. A request
 * whose caller hung up before it was read is dropped before its handler runs.
 */

let server: Server;
let base: string;
const registry = new Registry();
/** Requests that reached Express (its `handle`, which the app function calls). */
let handled = 0;
/** Handlers that ran, and the releases of the ones held open. */
const ran: string[] = [];
const held: (() => void)[] = [];

beforeAll(async () => {
  const app = createHttpApp({
    log: createLogger({ level: 'silent' }),
    registry,
    bodyLimitBytes: 1024,
    readiness: {},
    maxInFlight: 2,
    deadlineMs: 30_000,
  });
  app.post('/api/hold/:id', (req, res) => {
    ran.push(req.params.id);
    held.push(() => res.status(201).json({ id: req.params.id }));
  });
  finishHttpApp(app, createLogger({ level: 'silent' }));
  const inner = app as unknown as { handle: (...args: unknown[]) => unknown };
  const appHandle = inner.handle.bind(app);
  inner.handle = (...args: unknown[]) => {
    handled++;
    return appHandle(...args);
  };
  server = await listen(app, 0, '127.0.0.1');
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  for (const release of held.splice(0)) release();
  await closeServer(server);
});

const post = (id: string) => fetch(`${base}/api/hold/${id}`, { method: 'POST' });

describe('admission (HTTP_MAX_IN_FLIGHT)', () => {
  it('refuses the request beyond the limit at once, without running it', async () => {
    const first = post('a');
    const second = post('b');
    await expect.poll(() => ran.length).toBe(2);

    const reached = handled;
    const t0 = Date.now();
    const third = await post('c?x=1');
    expect(Date.now() - t0).toBeLessThan(1_000);
    expect(third.status).toBe(503);
    expect(third.headers.get('retry-after')).toBe('1');
    expect(third.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
    // The problem every other refusal carries (problem.ts, `sendProblem`).
    expect(await third.json()).toEqual({
      type: 'https://docs.svc.dev/errors/svc_unavailable',
      title: 'Service unavailable',
      status: 503,
      detail: 'The service is at capacity; retry shortly',
      code: 'SVC_UNAVAILABLE',
      instance: '/api/hold/c?x=1',
    });
    // Express matches /api whatever the case: so does admission control.
    expect((await fetch(`${base}/API/hold/d`, { method: 'POST' })).status).toBe(503);
    expect(handled).toBe(reached); // neither reached Express
    expect(ran).toEqual(['a', 'b']);
    expect(await registry.getSingleMetricAsString('svc_http_shed_total')).toMatch(
      /svc_http_shed_total 2$/m,
    );
    expect(await registry.getSingleMetricAsString('svc_http_shed_lagging_total')).toMatch(
      /svc_http_shed_lagging_total 0$/m,
    );
    expect(await registry.getSingleMetricAsString('svc_http_requests_total')).toMatch(
      /svc_http_requests_total\{method="POST",route="unmatched",status="503"\} 2$/m,
    );

    held.shift()!();
    expect((await first).status).toBe(201);
    const fourth = post('d');
    await expect.poll(() => ran).toEqual(['a', 'b', 'd']);
    for (const release of held.splice(0)) release();
    expect((await second).status).toBe(201);
    expect((await fourth).status).toBe(201);
  });

  it('drops a request whose caller hung up while it waited unread, before its handler runs', async () => {
    const reached = handled;
    const port = (server.address() as AddressInfo).port;
    // This process's event loop is blocked (spawnSync) while another process connects, sends a
    // POST and hangs up 100 ms later: the request waits unread in the listen backlog until its
    // caller has gone, as thousands do in a burst.
    const client = [
      `const s = require('node:net').connect(${port}, '127.0.0.1', () => {`,
      `  s.write('POST /api/hold/gone HTTP/1.1\\r\\nHost: x\\r\\nContent-Type: application/json\\r\\nContent-Length: 2\\r\\n\\r\\n{}');`,
      '  setTimeout(() => s.destroy(), 100);',
      '});',
    ].join('\n');
    const hangUp = spawnSync(process.execPath, ['-e', client], { timeout: 10_000 });
    expect(hangUp.status).toBe(0);
    const gone = async () => registry.getSingleMetricAsString('svc_http_callers_gone_total');
    await expect.poll(gone).toMatch(/svc_http_callers_gone_total 1$/m);
    expect(handled).toBe(reached); // it never reached Express
    expect(ran).not.toContain('gone');
    // Its place is given back, and a caller that waits is served as before.
    const first = post('h');
    const second = post('i');
    await expect.poll(() => ran).toEqual(expect.arrayContaining(['h', 'i']));
    for (const release of held.splice(0)) release();
    expect((await first).status).toBe(201);
    expect((await second).status).toBe(201);
  });

  it('counts a request the deadline answered until its handler is done', async () => {
    const app = createHttpApp({
      log: createLogger({ level: 'silent' }),
      registry: new Registry(),
      bodyLimitBytes: 1024,
      readiness: {},
      maxInFlight: 1,
      deadlineMs: 200,
    });
    const ranHere: string[] = [];
    let finishA: (() => void) | undefined;
    app.post('/api/slow/:id', async (req, res) => {
      ranHere.push(req.params.id);
      if (req.params.id === 'a') await new Promise<void>((r) => (finishA = r));
      res.status(201).json({ id: req.params.id });
    });
    finishHttpApp(app, createLogger({ level: 'silent' }));
    const srv = await listen(app, 0, '127.0.0.1');
    const url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}/api/slow`;
    try {
      const a = await fetch(`${url}/a`, { method: 'POST' });
      expect(a.status).toBe(503); // the deadline's answer; the handler is still at work
      const b = await fetch(`${url}/b`, { method: 'POST' });
      expect(b.status).toBe(503);
      expect(b.headers.get('retry-after')).toBe('1');
      expect(ranHere).toEqual(['a']); // b was refused before its handler ran
      finishA!(); // a's late answer is dropped, and a is counted out
      await expect.poll(async () => (await fetch(`${url}/c`, { method: 'POST' })).status).toBe(201);
      expect(ranHere).toContain('c');
    } finally {
      finishA?.();
      await closeServer(srv);
    }
  });

  it('does not count requests outside /api', async () => {
    for (let i = 0; i < 5; i++) expect((await fetch(`${base}/healthz`)).status).toBe(200);
    // /apis is not /api: not held to the limit (and here, no route: 404).
    const first = post('e');
    const second = post('f');
    await expect.poll(() => held.length).toBe(2);
    expect((await fetch(`${base}/apis/x`, { method: 'POST' })).status).toBe(404);
    expect((await post('g')).status).toBe(503);
    for (const release of held.splice(0)) release();
    expect((await first).status).toBe(201);
    expect((await second).status).toBe(201);
  });

  it('while the event loop lags past HTTP_LAG_SHED_MS, admits fewer at once; more again once it keeps up', async () => {
    const reg = new Registry();
    const app = createHttpApp({
      log: createLogger({ level: 'silent' }),
      registry: reg,
      bodyLimitBytes: 1024,
      readiness: {},
      maxInFlight: 8,
      deadlineMs: 30_000,
      lagShedMs: 100,
    });
    const holds: (() => void)[] = [];
    app.post('/api/hold/:id', (req, res) => {
      holds.push(() => res.status(201).json({ id: req.params.id }));
    });
    finishHttpApp(app, createLogger({ level: 'silent' }));
    const srv = await listen(app, 0, '127.0.0.1');
    const url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}/api/hold`;
    let hog: NodeJS.Timeout | undefined;
    const limit = async () =>
      Number(
        /svc_http_admission_limit (\d+)$/m.exec(
          await reg.getSingleMetricAsString('svc_http_admission_limit'),
        )?.[1],
      );
    try {
      expect(await limit()).toBe(8);
      // The loop busy 150 ms of every 200 or so, as a burst's work would keep it: every window
      // lags more than 100 ms, and the limit halves down to its floor, 4, and stays there.
      hog = setInterval(() => {
        const until = Date.now() + 150;
        while (Date.now() < until);
      }, 50);
      await expect.poll(limit).toBe(4);
      const admitted = [1, 2, 3, 4].map((i) => fetch(`${url}/${i}`, { method: 'POST' }));
      await expect.poll(() => holds.length).toBe(4);
      const fifth = await fetch(`${url}/5`, { method: 'POST' });
      expect(fifth.status).toBe(503);
      expect(fifth.headers.get('retry-after')).toBe('1');
      expect(holds).toHaveLength(4);
      // Refused with fewer than HTTP_MAX_IN_FLIGHT in progress: counted as such.
      expect(await reg.getSingleMetricAsString('svc_http_shed_lagging_total')).toMatch(
        /svc_http_shed_lagging_total 1$/m,
      );
      expect(await reg.getSingleMetricAsString('svc_http_shed_total')).toMatch(
        /svc_http_shed_total 1$/m,
      );
      clearInterval(hog);
      // The loop keeps up again: the limit grows back to HTTP_MAX_IN_FLIGHT, one window at a time.
      await expect.poll(limit, { timeout: 5_000 }).toBe(8);
      const more = [6, 7, 8, 9].map((i) => fetch(`${url}/${i}`, { method: 'POST' }));
      await expect.poll(() => holds.length).toBe(8);
      for (const release of holds.splice(0)) release();
      for (const r of await Promise.all([...admitted, ...more])) expect(r.status).toBe(201);
    } finally {
      clearInterval(hog);
      for (const release of holds.splice(0)) release();
      await closeServer(srv);
    }
  });
});
