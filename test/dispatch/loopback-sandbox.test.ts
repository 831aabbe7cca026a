import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../shared/config.js';
import { dispatchIdFor } from '../../shared/storage/ledger/dispatches.js';
import { startProcess, type RunningProcess } from '../../bin/process.js';
import { dispatcherWorker } from '../../workers/dispatcher/index.js';
import { stackEnv, testLogger } from '../helpers/stack.js';
import {
  consentEvent,
  publish,
  sandboxApp,
  startReceiver,
  waitForDispatch,
  type Receiver,
} from './helpers.js';

/**
 * A sandbox app's webhook reply is shown to the app, so a loopback webhook URL would let any
 * sandbox user read this host's own services. Loopback is allowed on the embedded default
 * (one developer's machine) or when configured, never merely because the app is a sandbox.
 */

/** A dispatcher on the environment a user running on their own Kafka and DynamoDB would give. */
async function dispatcher(name: string, extra: Record<string, string> = {}) {
  const config = loadConfig(
    { ...stackEnv(name), WEBHOOK_TIMEOUT_MS: '1000', ...extra },
    { DISPATCH_SAFETY_NET_MS: 5000 },
  );
  return startProcess({
    name,
    services: [],
    workers: [dispatcherWorker],
    config,
    log: testLogger(config),
  });
}

let rcv: Receiver;
let external: RunningProcess;
let optedIn: RunningProcess;
beforeAll(async () => {
  rcv = await startReceiver();
  [external, optedIn] = await Promise.all([
    dispatcher('loopback-external'),
    dispatcher('loopback-opted-in', { WEBHOOK_ALLOW_LOOPBACK_SANDBOX: 'true' }),
  ]);
});
afterAll(async () => {
  await Promise.allSettled([external?.close(), optedIn?.close()]);
  await rcv.close();
});

describe('loopback webhooks of sandbox apps outside the embedded default', () => {
  it('are refused when not configured: recorded as ssrf_refused, no connection made', async () => {
    const { app } = await sandboxApp(external.rt, rcv.url('/not-configured'));
    const e = consentEvent(app);
    await publish(external.rt, [e]);
    const d = await waitForDispatch(external.rt, dispatchIdFor(e.id, `${app.appId}:webhook`), (x) =>
      expect(x.attemptCount).toBe(1),
    );
    expect(d.attempts[0]).toMatchObject({
      attempt: 1,
      outcome: 'failed',
      errorClass: 'ssrf_refused',
      responseExcerpt: '',
    });
    expect(d.attempts[0]!.errorMessage).toMatch(/loopback/);
    expect(rcv.at('/not-configured')).toHaveLength(0);
    expect(external.rt.config.WEBHOOK_ALLOW_LOOPBACK_SANDBOX).toBe(false);
  });

  it('are delivered when WEBHOOK_ALLOW_LOOPBACK_SANDBOX=true', async () => {
    const { app } = await sandboxApp(optedIn.rt, rcv.url('/configured'));
    const e = consentEvent(app);
    await publish(optedIn.rt, [e]);
    const d = await waitForDispatch(optedIn.rt, dispatchIdFor(e.id, `${app.appId}:webhook`), (x) =>
      expect(x.deliveryStatus).toBe('delivered'),
    );
    expect(d.attempts[0]).toMatchObject({ attempt: 1, statusCode: 200 });
    expect(rcv.at('/configured')).toHaveLength(1);
  });
});
