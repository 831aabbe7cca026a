import net, { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dispatchIdFor } from '../../shared/storage/ledger/dispatches.js';
import type { RunningProcess } from '../../bin/process.js';
import { dispatcherWorker } from '../../workers/dispatcher/index.js';
import { testProcess } from '../helpers/stack.js';
import { consentEvent, liveApp, publish, sandboxApp, waitForDispatch } from './helpers.js';

/** A bare TCP listener on loopback: any connection to it would be counted. */
let connections = 0;
const tcp = net.createServer((s) => {
  connections++;
  s.destroy();
});
let port = 0;
let p: RunningProcess;
beforeAll(async () => {
  await new Promise<void>((r) => tcp.listen(0, '127.0.0.1', r));
  port = (tcp.address() as AddressInfo).port;
  p = await testProcess('dispatch-ssrf', [], [dispatcherWorker], {
    WEBHOOK_TIMEOUT_MS: '1000',
    DISPATCH_SAFETY_NET_MS: '5000',
  });
});
afterAll(async () => {
  await p.close();
  await new Promise((r) => tcp.close(r));
});

describe('SSRF guard in the dispatcher', () => {
  it.each([
    [
      'a live app whose https host name resolves to loopback',
      'live',
      'https://localhost:{port}/hook',
    ],
    ['a live app with a loopback IP literal', 'live', 'https://127.0.0.1:{port}/hook'],
    [
      'a live app with an IPv4-mapped IPv6 loopback',
      'live',
      'https://[::ffff:127.0.0.1]:{port}/hook',
    ],
    ['a sandbox app with a private IP literal', 'sandbox', 'http://10.0.0.1/hook'],
    [
      'a sandbox app with the cloud metadata address',
      'sandbox',
      'http://169.254.169.254/latest/meta-data/',
    ],
    ['a sandbox app with a CGNAT address', 'sandbox', 'http://100.64.1.1/hook'],
  ])('refuses %s, records it, and never connects', async (_name, env, template) => {
    const url = template.replace('{port}', String(port));
    const { app } = env === 'live' ? await liveApp(p.rt, url) : await sandboxApp(p.rt, url);
    const e = consentEvent(app);
    await publish(p.rt, [e]);
    const d = await waitForDispatch(p.rt, dispatchIdFor(e.id, `${app.appId}:webhook`), (x) =>
      expect(x.attemptCount).toBe(1),
    );
    expect(d.attempts[0]).toMatchObject({
      attempt: 1,
      errorClass: 'ssrf_refused',
      outcome: 'failed',
      responseExcerpt: '',
    });
    expect(d.attempts[0]!.statusCode).toBeUndefined();
    expect(d.attempts[0]!.errorMessage).toMatch(/loopback|private|link_local|cgnat/);
    expect(d.deliveryStatus).toBe('pending'); // retried on the schedule: the app may fix its URL
    expect(connections).toBe(0);
  });
});
