import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebhookClient } from './client.js';
import { guardedLookup, policyFor } from './guard.js';
import { parseCidrList } from '../net/ip.js';

/** A real receiver on loopback; each path picks a behaviour. */
const seen: { path: string; port: number }[] = [];
const server = http.createServer((req, res) => {
  seen.push({ path: req.url ?? '', port: req.socket.remotePort ?? 0 });
  req.resume();
  req.on('end', () => {
    if (req.url === '/ok') res.end('{"received":true}');
    else if (req.url === '/big') res.end('é'.repeat(5000));
    else if (req.url === '/redirect') res.writeHead(302, { location: '/target' }).end();
    else if (req.url === '/busy') res.writeHead(503, { 'retry-after': '7' }).end('busy');
    else if (req.url === '/hang')
      return; // never answers
    else res.writeHead(404).end();
  });
});
/** A bare TCP listener: counts connections, to prove a refused destination was never dialled. */
let tcpConnections = 0;
const tcp = net.createServer((s) => {
  tcpConnections++;
  s.destroy();
});
let base = '';
let tcpPort = 0;
const client = new WebhookClient({ maxSocketsPerDestination: 4 });
const sandbox = policyFor('sandbox', { allowlist: [], allowLoopbackSandbox: true });
const live = policyFor('live', { allowlist: [], allowLoopbackSandbox: true });

beforeAll(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  await new Promise<void>((r) => tcp.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  tcpPort = (tcp.address() as AddressInfo).port;
});
afterAll(async () => {
  client.close();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  await new Promise((r) => tcp.close(r));
});

const post = (url: string, policy = sandbox, timeoutMs = 2000, signal?: AbortSignal) =>
  client.post({
    url,
    headers: { 'content-type': 'application/json' },
    body: '{}',
    policy,
    timeoutMs,
    ...(signal ? { signal } : {}),
  });

describe('WebhookClient against a real loopback receiver', () => {
  it('delivers, keeps the connection alive and records the response', async () => {
    const a = await post(`${base}/ok`);
    const b = await post(`${base}/ok`);
    expect(a).toMatchObject({ ok: true, statusCode: 200, responseExcerpt: '{"received":true}' });
    expect(b.ok).toBe(true);
    const ports = seen.filter((s) => s.path === '/ok').map((s) => s.port);
    expect(ports).toHaveLength(2);
    expect(ports[0]).toBe(ports[1]); // same socket: pooled
  });

  it('keeps at most 4 KiB of a response body, on a character boundary', async () => {
    const r = await post(`${base}/big`);
    expect(r.ok).toBe(true);
    expect(Buffer.byteLength(r.responseExcerpt)).toBeLessThanOrEqual(4096);
    expect(Buffer.byteLength(r.responseExcerpt)).toBeGreaterThan(4090);
    expect(r.responseExcerpt).toMatch(/^é+$/);
  });

  it('never follows a redirect', async () => {
    const r = await post(`${base}/redirect`);
    expect(r).toMatchObject({ ok: false, statusCode: 302, errorClass: 'redirect' });
    expect(seen.some((s) => s.path === '/target')).toBe(false);
  });

  it('passes Retry-After on', async () => {
    expect(await post(`${base}/busy`)).toMatchObject({
      ok: false,
      statusCode: 503,
      errorClass: 'http',
      retryAfter: '7',
    });
  });

  it('times out', async () => {
    const r = await post(`${base}/hang`, sandbox, 300);
    expect(r).toMatchObject({ ok: false, errorClass: 'timeout' });
    expect(r.durationMs).toBeGreaterThanOrEqual(290);
    expect(r.durationMs).toBeLessThan(2000);
  });

  it('reports a refused connection and an aborted attempt', async () => {
    const closed = net.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    expect(await post(`http://127.0.0.1:${port}/`)).toMatchObject({
      ok: false,
      errorClass: 'connection',
    });
    const ac = new AbortController();
    const pending = post(`${base}/hang`, sandbox, 5000, ac.signal);
    ac.abort();
    expect(await pending).toMatchObject({ ok: false, aborted: true });
  });

  it.each([
    ['http://10.0.0.1/hook', sandbox, 'ssrf_refused'],
    ['http://169.254.169.254/latest/meta-data', sandbox, 'ssrf_refused'],
    ['http://[::ffff:10.0.0.1]/', sandbox, 'ssrf_refused'],
    ['http://0x7f000001/', live, 'invalid_url'],
    ['https://127.0.0.1/', live, 'ssrf_refused'],
    ['https://[::1]/', live, 'ssrf_refused'],
    ['https://[::ffff:127.0.0.1]/', live, 'ssrf_refused'],
    ['https://100.64.0.1/', live, 'ssrf_refused'],
    ['ftp://example.com/', sandbox, 'invalid_url'],
    ['https://user:pw@example.com/', live, 'invalid_url'],
  ])('refuses %s before connecting', async (url, policy, errorClass) => {
    expect(await post(url, policy)).toMatchObject({ ok: false, errorClass, refused: true });
  });

  it('refuses a live destination whose name resolves to loopback, without dialling it', async () => {
    const r = await post(`https://localhost:${tcpPort}/hook`, live);
    expect(r).toMatchObject({ ok: false, errorClass: 'ssrf_refused' });
    expect(tcpConnections).toBe(0);
  });

  it('lets an allowlisted range through (the connection is made)', async () => {
    const allowed = policyFor('live', {
      allowlist: parseCidrList('127.0.0.0/8,::1'),
      allowLoopbackSandbox: false,
    });
    const r = await post(`https://localhost:${tcpPort}/hook`, allowed);
    expect(r.ok).toBe(false);
    expect(r.errorClass).not.toBe('ssrf_refused');
    expect(tcpConnections).toBeGreaterThan(0);
  });
});

describe('guardedLookup', () => {
  const fake =
    (addresses: string[]) =>
    (
      _h: string,
      _o: unknown,
      cb: (e: NodeJS.ErrnoException | null, a: { address: string; family: number }[]) => void,
    ) =>
      cb(
        null,
        addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
      );
  const lookup = (addresses: string[], all: boolean) =>
    new Promise<{ err: Error | null; address: unknown }>((resolve) =>
      guardedLookup({ allowlist: [], allowLoopback: false }, fake(addresses))(
        'h.example',
        { all },
        (err, address) => resolve({ err, address }),
      ),
    );

  it('drops refused answers and keeps the global ones (a rebinding answer cannot be chosen)', async () => {
    expect(await lookup(['127.0.0.1', '93.184.216.34'], false)).toEqual({
      err: null,
      address: '93.184.216.34',
    });
    expect((await lookup(['10.0.0.1', '2606:4700::1'], true)).address).toEqual([
      { address: '2606:4700::1', family: 6 },
    ]);
  });

  it('fails when every answer is refused', async () => {
    const r = await lookup(['127.0.0.1', '::1'], false);
    expect(r.err).toMatchObject({ code: 'ERR_SSRF_REFUSED' });
    expect(r.err?.message).toContain('loopback');
  });
});
