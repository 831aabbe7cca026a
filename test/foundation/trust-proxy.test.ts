import type { Express } from 'express';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nonLoopbackAddresses } from '../../infra/local/proc.js';
import { loadConfig } from '../../shared/config.js';
import { closeServer, createHttpApp, listen } from '../../shared/http/server.js';
import { createLogger } from '../../shared/logger.js';
import type { RunningProcess } from '../../bin/process.js';
import type { ServiceModule } from '../../shared/module.js';
import { testProcess } from '../helpers/stack.js';

/**
 * X-Forwarded-For decides `req.ip` (rate-limit buckets, the widget's IP hash) and
 * X-Forwarded-Proto decides `req.protocol`. They are believed only from the proxies
 * TRUST_PROXY names (by default loopback), checked over real HTTP from a loopback peer and
 * from a peer on this machine's network address.
 */

const forwarded = { 'x-forwarded-for': '203.0.113.9', 'x-forwarded-proto': 'https' };

/** An IPv4 address of this machine other than loopback: a peer that is not loopback. */
function outsideV4(): string {
  const addr = nonLoopbackAddresses().find((a) => !a.includes(':'));
  if (!addr)
    throw new Error(
      'this machine has no non-loopback IPv4 address, so a request from a non-loopback peer cannot be made; run this test on a machine with a network interface',
    );
  return addr;
}

/** GET /who from `from` (the peer address the server sees) with the given headers. */
function who(host: string, port: number, from: string, headers: Record<string, string>) {
  return new Promise<{ ip: string; protocol: string }>((resolve, reject) => {
    const req = http.get({ host, port, path: '/who', localAddress: from, headers }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString('utf8')));
      res.on('end', () => resolve(JSON.parse(body) as { ip: string; protocol: string }));
    });
    req.on('error', reject);
  });
}

const whoRoute = (app: Express) =>
  app.get('/who', (req, res) => {
    res.json({ ip: req.ip, protocol: req.protocol });
  });

const whoService: ServiceModule = { name: 'who', mount: (app) => void whoRoute(app) };

/** An app as every process builds it, with `TRUST_PROXY` as configured, on `host`. */
async function serve(host: string, env: Record<string, string>) {
  const config = loadConfig(env);
  const app = createHttpApp({
    log: createLogger({ level: 'silent' }),
    registry: new Registry(),
    bodyLimitBytes: config.BODY_LIMIT_BYTES,
    readiness: {},
    trustProxy: config.TRUST_PROXY,
  });
  whoRoute(app);
  const server = await listen(app, 0, host);
  return { server, port: (server.address() as AddressInfo).port };
}

describe('TRUST_PROXY over real HTTP', () => {
  let outside: string;
  beforeAll(() => {
    outside = outsideV4();
  });

  it.each([
    ['unset, from loopback: the loopback proxy is believed', '127.0.0.1', {}, '203.0.113.9'],
    ['unset, from a network peer: ignored', 'outside', {}, 'outside'],
    ['false, from loopback: ignored', '127.0.0.1', { TRUST_PROXY: 'false' }, '127.0.0.1'],
    ['the peer named, from it: believed', 'outside', { TRUST_PROXY: 'outside/32' }, '203.0.113.9'],
    ['another address named: ignored', 'outside', { TRUST_PROXY: '10.9.9.9' }, 'outside'],
    ['one hop, from a network peer: believed', 'outside', { TRUST_PROXY: '1' }, '203.0.113.9'],
  ])('%s', async (_name, at, env, expectedIp) => {
    const host = at === 'outside' ? outside : at;
    const e = Object.fromEntries(
      Object.entries(env).map(([k, v]) => [k, v.replace('outside', outside)]),
    );
    const { server, port } = await serve(host, e);
    try {
      const r = await who(host, port, host, forwarded);
      const ip = expectedIp === 'outside' ? outside : expectedIp;
      expect(r).toEqual({ ip, protocol: ip === '203.0.113.9' ? 'https' : 'http' });
    } finally {
      await closeServer(server);
    }
  });

  it('two hops: the client in front of both proxies', async () => {
    const { server, port } = await serve(outside, { TRUST_PROXY: '2' });
    try {
      const r = await who(outside, port, outside, {
        'x-forwarded-for': '198.51.100.1, 203.0.113.9',
      });
      expect(r.ip).toBe('198.51.100.1');
    } finally {
      await closeServer(server);
    }
  });
});

describe('TRUST_PROXY reaches the HTTP app of a process', () => {
  let outside: string;
  let byDefault: RunningProcess;
  let configured: RunningProcess;
  beforeAll(async () => {
    outside = outsideV4();
    [byDefault, configured] = await Promise.all([
      testProcess('trust-default', [whoService], [], { HOST: outside }),
      testProcess('trust-configured', [whoService], [], {
        HOST: outside,
        TRUST_PROXY: `${outside}/32`,
      }),
    ]);
  });
  afterAll(async () => {
    await Promise.allSettled([byDefault?.close(), configured?.close()]);
  });

  it('ignores X-Forwarded-For from a network peer by default and believes it when configured', async () => {
    const port = (p: RunningProcess) => (p.server.address() as AddressInfo).port;
    expect(await who(outside, port(byDefault), outside, forwarded)).toEqual({
      ip: outside,
      protocol: 'http',
    });
    expect(await who(outside, port(configured), outside, forwarded)).toEqual({
      ip: '203.0.113.9',
      protocol: 'https',
    });
  });
});
