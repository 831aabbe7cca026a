import { randomBytes } from 'node:crypto';
import { expect, vi } from 'vitest';
import { adminService } from '../../services/admin/index.js';
import { consentsService } from '../../services/consents/index.js';
import { ledgerService } from '../../services/ledger/index.js';
import { postbackService } from '../../services/postback/index.js';
import { publicApiService } from '../../services/public-api/index.js';
import { POSTBACK_PATH, type ConsentEvent } from '../../shared/domain/consent/events.js';
import type { DispatchWithAttempts } from '../../shared/ledger/queries.js';
import type { RunningProcess } from '../../bin/process.js';
import { createComplianceWorker } from '../../workers/compliance/index.js';
import { dispatcherWorker } from '../../workers/dispatcher/index.js';
import { relayWorker } from '../../workers/relay/index.js';
import { createTimersWorker } from '../../workers/timers/index.js';
import { client, type Reply } from '../admin/client.js';
import { startReceiver } from '../dispatch/helpers.js';
import { collectTopic } from '../helpers/kafka.js';
import { testProcess } from '../helpers/stack.js';

/**
 * The whole pipeline in one real process: admin, record, public and postback APIs, and the
 * relay, dispatcher, compliance and timers workers, against the shared Kafka and DynamoDB
 * Local, with a loopback receiver standing in for the app's server. The compliance and timers
 * workers share a clock the test can move forward (SLA and expiry logic only; HTTP, Kafka and
 * the dispatcher keep real time).
 */

export const ENCRYPTION_KEY = Buffer.alloc(32, 5).toString('base64');

export function testClock() {
  let offset = 0;
  return {
    now: () => Date.now() + offset,
    advance: (ms: number) => {
      offset += ms;
    },
  };
}

export interface PipelineApp {
  appId: string;
  /** consents:read + consents:write + ledger:read */
  key: string;
  secretKey: string;
}

export async function startPipeline(name: string, extra: Record<string, string> = {}) {
  const clock = testClock();
  const token = `compliance-admin-${randomBytes(12).toString('hex')}`;
  const rcv = await startReceiver();
  const p: RunningProcess = await testProcess(
    name,
    [adminService, consentsService, publicApiService, postbackService, ledgerService],
    [
      relayWorker,
      dispatcherWorker,
      createComplianceWorker({ now: clock.now }),
      createTimersWorker({ now: clock.now }),
    ],
    {
      SVC_ADMIN_TOKEN: token,
      SVC_ENCRYPTION_KEY: ENCRYPTION_KEY,
      WEBHOOK_TIMEOUT_MS: '2000',
      DISPATCH_SAFETY_NET_MS: '10000',
      TIMER_SWEEP_INTERVAL_MS: '100',
      EXPIRY_SWEEP_INTERVAL_MS: '100',
      DUTY_SWEEP_INTERVAL_MS: '100',
      COMPLIANCE_GAUGE_INTERVAL_MS: '200',
      ...extra,
    },
  );
  const events = await collectTopic(p.rt.kafka, p.rt.topics.consentEvents);
  /** Each app's ledger:read key: flags are read back through the auditors' ledger API. */
  const ledgerKeys = new Map<string, string>();
  const http = client(p.url);

  async function admin(method: string, path: string, body?: unknown) {
    const r = await http(method, `/api/v1/admin${path}`, body, {
      authorization: `Bearer ${token}`,
    });
    expect(r.status, JSON.stringify(r.body)).toBeLessThan(300);
    return r.body;
  }

  async function createApp(
    slaTimeScale: number,
    settings: Record<string, unknown> = {},
  ): Promise<PipelineApp> {
    const created = await admin('POST', '/apps', {
      ...settings,
      name: 'Compliance shop',
      environment: 'sandbox',
      webhookUrl: rcv.url('/hooks'),
      allowedOrigins: ['https://shop.example'],
      contactEmail: 'dpo@shop.example',
      slaTimeScale,
    });
    const appId = created.app.appId as string;
    const key = await admin('POST', `/apps/${appId}/api-keys`, {
      name: 'all',
      scopes: ['consents:read', 'consents:write', 'ledger:read'],
    });
    ledgerKeys.set(appId, key.key as string);
    return { appId, key: key.key as string, secretKey: created.secretKey as string };
  }

  const bearer = (a: PipelineApp) => ({ authorization: `Bearer ${a.key}` });
  const secret = (a: PipelineApp) => ({ 'x-secret-key': a.secretKey });

  /** Every webhook the receiver got, parsed, with its dispatch id. */
  const webhooks = () =>
    rcv.received.map((r) => ({
      dispatchId: String(r.headers['x-svc-dispatch-id']),
      event: JSON.parse(r.body) as ConsentEvent,
    }));

  async function waitForWebhook(referenceId: string, type: ConsentEvent['type']) {
    return vi.waitFor(
      () => {
        const w = webhooks().find(
          (h) => h.event.data.referenceId === referenceId && h.event.type === type,
        );
        expect(w, `${type} webhook for ${referenceId}`).toBeDefined();
        return w!;
      },
      { timeout: 15_000, interval: 50 },
    );
  }

  /** A user's consent (record API), withdrawn at once: the consent.withdrawn webhook. */
  async function withdrawnUser(a: PipelineApp, userId: string) {
    const created = await http(
      'POST',
      '/api/v1/consents',
      { userId, email: `${userId}@mail.example`, consents: { marketing: true } },
      bearer(a),
    );
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const del = await http('DELETE', `/api/v1/consents/${userId}`, undefined, bearer(a));
    expect(del.status).toBe(200);
    const hook = await waitForWebhook(created.body.referenceId, 'consent.withdrawn');
    return { ...hook, referenceId: created.body.referenceId as string, record: created.body };
  }

  function postback(a: PipelineApp, body: Record<string, unknown>): Promise<Reply> {
    return http(
      'POST',
      POSTBACK_PATH,
      {
        completedAt: new Date().toISOString(),
        tags: [],
        actions: [{ type: 'stop_processing', result: 'done' }],
        ...body,
      },
      secret(a),
    );
  }

  /** The dispatch as an auditor sees it: GET /api/v1/ledger/dispatches/{id} with ledger:read. */
  async function ledger(dispatchId: string): Promise<DispatchWithAttempts> {
    const hook = webhooks().find((h) => h.dispatchId === dispatchId);
    expect(hook, `a webhook for ${dispatchId}`).toBeDefined();
    const key = ledgerKeys.get(hook!.event.appId);
    expect(key, `a ledger key for ${hook!.event.appId}`).toBeDefined();
    const r = await http('GET', `/api/v1/ledger/dispatches/${dispatchId}`, undefined, {
      authorization: `Bearer ${key}`,
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body as DispatchWithAttempts;
  }

  /** Polls the ledger API until the dispatch's flag history is `flags` (exactly, in order). */
  async function waitForFlags(dispatchId: string, flags: string[], timeout = 20_000) {
    return vi.waitFor(
      async () => {
        const d = await ledger(dispatchId);
        expect(d.flagHistory.map((f) => f.flag)).toEqual(flags);
        return d;
      },
      { timeout, interval: 100 },
    );
  }

  /** The value of one series of a metric on the process's registry (0 when absent). */
  async function metric(name: string, labels: Record<string, string> = {}) {
    const m = await p.rt.registry.getSingleMetric(name)?.get();
    const v = m?.values.find((s) =>
      Object.entries(labels).every(([k, val]) => String(s.labels[k]) === val),
    );
    return v?.value ?? 0;
  }

  /** Waits until a metric series reads `value` (metrics move just after the ledger write). */
  async function waitForMetric(
    name: string,
    labels: Record<string, string>,
    value: number,
    timeoutMs = 10_000,
  ) {
    await vi.waitFor(async () => expect(await metric(name, labels)).toBe(value), {
      timeout: timeoutMs,
      interval: 50,
    });
  }

  return {
    p,
    rt: p.rt,
    rcv,
    clock,
    http,
    adminToken: token,
    admin,
    createApp,
    bearer,
    secret,
    webhooks,
    waitForWebhook,
    withdrawnUser,
    postback,
    waitForFlags,
    ledger,
    metric,
    waitForMetric,
    events: events.messages,
    async close() {
      rcv.releaseAll();
      await events.stop();
      await p.close();
      await rcv.close();
    },
  };
}

export type Pipeline = Awaited<ReturnType<typeof startPipeline>>;
