import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { adminService } from '../../services/admin/index.js';
import { consoleService } from '../../services/console/index.js';
import { ledgerService } from '../../services/ledger/index.js';
import { getApp } from '../../shared/domain/apps.js';
import { dispatchIdFor } from '../../shared/storage/ledger/dispatches.js';
import type { RunningProcess } from '../../bin/process.js';
import { dispatcherWorker } from '../../workers/dispatcher/index.js';
import { client, sandboxApp as sandboxBody } from '../admin/client.js';
import { consoleClient, csrfOf } from '../console/client.js';
import { testProcess } from '../helpers/stack.js';
import { consentEvent, publish, startReceiver, type Receiver } from './helpers.js';

/**
 * Whoever may set a sandbox app's webhook URL (a console key) must not reach the operator's
 * private networks through it: WEBHOOK_ALLOWLIST is for live apps only, and no reply from a
 * non-global address is kept in the ledger (its `responseExcerpt` is ''). Loopback stands for
 * the allowlisted private address here; the receiver answers with what an internal service
 * would.
 */

const token = 'sandbox-allowlist-admin-token-0123456789';
const INTERNAL = 'internal-service-secret';
let rcv: Receiver;
let listed: RunningProcess;
let loopback: RunningProcess;

async function start(name: string, extra: Record<string, string>) {
  return testProcess(name, [adminService, ledgerService, consoleService], [dispatcherWorker], {
    SVC_ADMIN_TOKEN: token,
    WEBHOOK_TIMEOUT_MS: '1000',
    ...extra,
  });
}

beforeAll(async () => {
  rcv = await startReceiver();
  rcv.on('/internal', (_r, w) => w.end(INTERNAL));
  [listed, loopback] = await Promise.all([
    start('sbx-allowlist', {
      WEBHOOK_ALLOWLIST: '127.0.0.0/8',
      WEBHOOK_ALLOW_LOOPBACK_SANDBOX: 'false',
    }),
    start('sbx-loopback', { WEBHOOK_ALLOW_LOOPBACK_SANDBOX: 'true' }),
  ]);
});
afterAll(async () => {
  await Promise.allSettled([listed?.close(), loopback?.close()]);
  await rcv?.close();
});

/** A sandbox app at the internal address, made over the admin API, and a ledger reader's key. */
async function setUp(p: RunningProcess) {
  const admin = client(`${p.url}/api/v1/admin`, { authorization: `Bearer ${token}` });
  const made = await admin('POST', '/apps', sandboxBody({ webhookUrl: rcv.url('/internal') }));
  expect(made.status).toBe(201);
  const appId = made.body.app.appId as string;
  const key = await admin('POST', `/apps/${appId}/api-keys`, {
    name: 'reader',
    scopes: ['ledger:read'],
  });
  expect(key.status).toBe(201);
  const ledger = client(`${p.url}/api/v1/ledger`, {
    authorization: `Bearer ${key.body.key as string}`,
  });
  return { admin, appId, ledger };
}

async function dispatchOf(p: RunningProcess, appId: string) {
  const app = (await getApp(p.rt, appId))!;
  const e = consentEvent(app);
  await publish(p.rt, [e]);
  return dispatchIdFor(e.id, `${appId}:webhook`);
}

describe('sandbox apps and WEBHOOK_ALLOWLIST', () => {
  it('a console key cannot point a sandbox app at an allowlisted private address and read it', async () => {
    const admin = client(`${listed.url}/api/v1/admin`, { authorization: `Bearer ${token}` });
    const made = await admin('POST', '/apps', sandboxBody());
    expect(made.status).toBe(201);
    const appId = made.body.app.appId as string;
    const key = await admin('POST', `/apps/${appId}/api-keys`, {
      name: 'console and reader',
      scopes: ['console', 'ledger:read'],
    });
    expect(key.status).toBe(201);
    const ledger = client(`${listed.url}/api/v1/ledger`, {
      authorization: `Bearer ${key.body.key as string}`,
    });
    const before = rcv.at('/internal').length;

    // The console key sets the webhook URL to the internal address and sends a test event.
    const c = consoleClient(listed.url);
    expect((await c.post('/console/sign-in', { credential: key.body.key as string })).status).toBe(
      303,
    );
    const page = await c.get(`/console/apps/${appId}/sandbox`);
    expect(page.status).toBe(200);
    const _csrf = csrfOf(page.text);
    const set = await c.post(`/console/apps/${appId}/sandbox/webhook-url`, {
      webhookUrl: rcv.url('/internal'),
      _csrf,
    });
    expect(set.status).toBe(303);
    const sent = await c.post(`/console/apps/${appId}/sandbox/test-events`, {
      type: 'consent.granted',
      variant: 'signed',
      _csrf,
    });
    expect(sent.status).toBe(303);
    const shown = await c.get(`/console/apps/${appId}/sandbox`);
    expect(shown.text).not.toContain(INTERNAL);
    expect(rcv.at('/internal')).toHaveLength(before);
    // The admin API's test event, the same tool: refused before any connection.
    const viaAdmin = await admin('POST', `/apps/${appId}/sandbox/test-events`, {
      type: 'consent.granted',
    });
    expect(viaAdmin.body).toMatchObject({ ok: false, status: null });
    expect(viaAdmin.body.error).toMatch(/loopback address refused/);

    const id = await dispatchOf(listed, appId);
    const d = await vi.waitFor(
      async () => {
        const r = await ledger('GET', `/dispatches/${id}`);
        expect(r.status).toBe(200);
        expect(r.body.attempts.length).toBeGreaterThan(0);
        return r.body;
      },
      { timeout: 15_000, interval: 100 },
    );
    expect(d.attempts[0]).toMatchObject({ errorClass: 'ssrf_refused', responseExcerpt: '' });
    expect(JSON.stringify(d)).not.toContain(INTERNAL);
    expect(rcv.at('/internal')).toHaveLength(before);
  });

  it('keeps no reply of a loopback receiver (WEBHOOK_ALLOW_LOOPBACK_SANDBOX): the excerpt is empty', async () => {
    const { appId, ledger } = await setUp(loopback);
    const id = await dispatchOf(loopback, appId);
    const d = await vi.waitFor(
      async () => {
        const r = await ledger('GET', `/dispatches/${id}`);
        expect(r.status).toBe(200);
        expect(r.body.deliveryStatus).toBe('delivered');
        return r.body;
      },
      { timeout: 15_000, interval: 100 },
    );
    expect(d.attempts[0]).toMatchObject({ statusCode: 200, responseExcerpt: '' });
    expect(JSON.stringify(d)).not.toContain(INTERNAL);
  });
});
