import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { adminService } from '../../services/admin/index.js';
import { consentsService } from '../../services/consents/index.js';
import { ledgerService } from '../../services/ledger/index.js';
import { dispatchDetail } from '../../services/ledger/schemas.js';
import { postbackService } from '../../services/postback/index.js';
import type { RunningProcess } from '../../bin/process.js';
import type { WorkerModule } from '../../shared/module.js';
import { dispatcherWorker } from '../../workers/dispatcher/index.js';
import { relayWorker } from '../../workers/relay/index.js';
import { startReceiver, type Receiver } from '../dispatch/helpers.js';
import { testProcess } from '../helpers/stack.js';
import { ROOT, dashboardExprs, metricNamesIn } from '../infra/metrics.js';
import { concreteQuery, startPrometheus, type Prometheus } from './prometheus.js';

/**
 * The SRE view against the running system: one process with every service and worker that
 * exists, real traffic (consents, webhooks to a loopback receiver, a postback, ledger reads),
 * and a real Prometheus scraping its /metrics every second with infra/prometheus/alerts.yml
 * loaded. Every dashboard query and every alert expression must run; those over series the
 * traffic certainly produced must return data.
 */

const ALERTS = path.join(ROOT, 'infra/prometheus/alerts.yml');
const alertNames = [...fs.readFileSync(ALERTS, 'utf8').matchAll(/^\s*- alert:\s*(\S+)/gm)].map(
  (m) => m[1]!,
);

/** Series the traffic below always produces (dispatcher, outbox, consumer runner). */
const TRAFFIC_METRICS = new Set([
  'svc_webhook_deliveries_total',
  'svc_webhook_delivery_duration_seconds_bucket',
  'svc_webhook_end_to_end_latency_seconds_bucket',
  'svc_outbox_backlog',
  'svc_outbox_published_total',
  'svc_consumer_lag',
  'svc_dynamodb_write_units_total',
  'svc_dynamodb_billed_write_units_total',
  'svc_dynamodb_requests_total',
  'svc_dynamodb_request_duration_seconds_bucket',
]);

/** Workers other sessions build; started when their module exists in this checkout. */
async function optionalWorkers(): Promise<WorkerModule[]> {
  const found: WorkerModule[] = [];
  for (const rel of ['workers/compliance/index.ts', 'workers/timers/index.ts']) {
    const file = path.join(ROOT, rel);
    if (!fs.existsSync(file)) continue;
    const mod = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
    for (const v of Object.values(mod)) {
      const w = v as Partial<WorkerModule> | null;
      if (w && typeof w === 'object' && typeof w.name === 'string' && typeof w.start === 'function')
        found.push(w as WorkerModule);
    }
  }
  return found;
}

let p: RunningProcess;
let rcv: Receiver;
let prom: Prometheus;
let workers: string[] = [];
/** The withdrawal's dispatch (answered by a postback) and a ledger:read key of its app. */
let withdrawnId: string;
let ledgerKey: string;

async function json(method: string, url: string, headers: Record<string, string>, body?: unknown) {
  const r = await fetch(`${p.url}${url}`, {
    method,
    headers: { ...headers, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await r.text();
  expect(r.status, `${method} ${url} → ${text}`).toBeLessThan(300);
  return text ? (JSON.parse(text) as Record<string, unknown>) : {};
}

beforeAll(async () => {
  rcv = await startReceiver();
  const token = `obs-admin-${randomBytes(12).toString('hex')}`;
  const extra = await optionalWorkers();
  const all = [relayWorker, dispatcherWorker, ...extra];
  workers = all.map((w) => w.name);
  p = await testProcess(
    'observability',
    [adminService, consentsService, postbackService, ledgerService],
    all,
    { SVC_ADMIN_TOKEN: token },
  );

  // Traffic: an app, a consent granted then withdrawn (webhooks), a postback, ledger reads.
  const admin = { authorization: `Bearer ${token}` };
  const created = await json('POST', '/api/v1/admin/apps', admin, {
    name: 'Observed',
    environment: 'sandbox',
    webhookUrl: rcv.url('/hooks'),
    allowedOrigins: ['https://shop.example'],
    contactEmail: 'sre@shop.example',
  });
  const appId = (created.app as { appId: string }).appId;
  const { key } = (await json('POST', `/api/v1/admin/apps/${appId}/api-keys`, admin, {
    name: 'all',
    scopes: ['consents:read', 'consents:write', 'ledger:read'],
  })) as { key: string };
  const bearer = { authorization: `Bearer ${key}` };
  const record = await json('POST', '/api/v1/consents', bearer, {
    userId: 'observed-user',
    email: 'observed@shop.example',
    consents: { marketing: true, analytics: true },
  });
  await json('PUT', '/api/v1/consents/observed-user', bearer, { consents: { marketing: false } });
  const withdrawn = await vi.waitFor(
    () => {
      const hit = rcv.at('/hooks').find((r) => r.headers['x-svc-event'] === 'consent.withdrawn');
      expect(hit).toBeDefined();
      return hit!;
    },
    { timeout: 20_000 },
  );
  await json(
    'POST',
    '/api/v1/server/consent/action',
    { 'x-secret-key': String(created.secretKey) },
    {
      dispatchId: String(withdrawn.headers['x-svc-dispatch-id']),
      referenceId: record.referenceId,
      status: 'processed',
      completedAt: new Date().toISOString(),
      risk: 'none',
    },
  );
  await json('GET', '/api/v1/ledger/dispatches', bearer);
  withdrawnId = String(withdrawn.headers['x-svc-dispatch-id']);
  ledgerKey = key;

  prom = await startPrometheus({ targets: [new URL(p.url).host], ruleFiles: [ALERTS] });
  await vi.waitFor(
    async () => {
      expect(prom.child.exitCode, prom.diagnose()).toBeNull();
      const t = await prom.api<{
        data: { activeTargets: { health: string; lastError: string }[] };
      }>('/api/v1/targets');
      expect(t.data.activeTargets.map((x) => [x.health, x.lastError])).toEqual([['up', '']]);
    },
    { timeout: 20_000, interval: 250 },
  );
  // Enough scrapes after the traffic for rate() over each delivery series.
  await vi.waitFor(
    async () => {
      const samples = async (series: string) => {
        const r = await prom.query(`min(count_over_time(${series}[1m]))`);
        return Number((r.data.result[0]?.value as [number, string] | undefined)?.[1] ?? 0);
      };
      expect(await samples('svc_webhook_deliveries_total')).toBeGreaterThanOrEqual(3);
      // The compliance worker (when present) records the postback's flag asynchronously.
      if (workers.includes('compliance'))
        expect(
          await samples('svc_compliance_flag_transitions_total{flag="ok"}'),
        ).toBeGreaterThanOrEqual(3);
    },
    { timeout: 20_000, interval: 250 },
  );
}, 90_000);

afterAll(async () => {
  await prom?.stop();
  await p?.close();
  rcv?.releaseAll();
  await rcv?.close();
});

describe('a real Prometheus scraping the running system', () => {
  it('scrapes the process: HTTP, delivery and ledger series are there', async () => {
    expect(workers).toEqual(expect.arrayContaining(['outbox-relay', 'dispatcher']));
    const http = await prom.query('sum by (route, status) (svc_http_requests_total)');
    expect(http.status).toBe('success');
    const routes = http.data.result.map((s) => `${s.metric.route} ${s.metric.status}`);
    expect(routes).toEqual(
      expect.arrayContaining([
        '/api/v1/consents/ 201',
        '/api/v1/server/consent/action 202',
        '/api/v1/ledger/dispatches 200',
      ]),
    );
    const delivered = await prom.query(
      'sum by (event) (svc_webhook_deliveries_total{outcome="delivered"})',
    );
    expect(delivered.data.result.map((s) => s.metric.event).sort()).toEqual([
      'consent.created',
      'consent.granted',
      'consent.withdrawn',
    ]);
  });

  it('shows the postback in the ledger API: recorded and flagged ok by the compliance worker', async () => {
    const read = async () =>
      (await json('GET', `/api/v1/ledger/dispatches/${withdrawnId}`, {
        authorization: `Bearer ${ledgerKey}`,
      })) as { complianceFlag: unknown; postbacks: unknown[]; flagHistory: unknown[] };
    if (!workers.includes('compliance')) {
      // Without the worker nobody records postbacks: the dispatch still awaits one.
      expect(await read()).toMatchObject({ complianceFlag: null, postbacks: [], flagHistory: [] });
      return;
    }
    const d = await vi.waitFor(
      async () => {
        const got = await read();
        expect(got.complianceFlag).toBe('ok');
        return got;
      },
      { timeout: 15_000, interval: 200 },
    );
    // The compliance worker's entries fit the documented response schema.
    expect(dispatchDetail.strict().safeParse(d).error).toBeUndefined();
    expect(d.postbacks).toEqual([
      expect.objectContaining({
        status: 'processed',
        risk: 'none',
        postbackId: expect.any(String),
      }),
    ]);
    expect(d.flagHistory).toEqual(
      expect.arrayContaining([expect.objectContaining({ flag: 'ok', at: expect.any(String) })]),
    );
    const verify = await json('GET', `/api/v1/ledger/dispatches/${withdrawnId}/verify`, {
      authorization: `Bearer ${ledgerKey}`,
    });
    expect(verify).toMatchObject({ ok: true });
  });

  it('answers every query of infra/grafana/svc-sla.json', async () => {
    const exprs = dashboardExprs();
    expect(exprs.length).toBeGreaterThanOrEqual(10);
    // With the compliance worker running, the postback above has moved a flag to ok.
    const expected = new Set(TRAFFIC_METRICS);
    if (workers.includes('compliance')) expected.add('svc_compliance_flag_transitions_total');
    let withData = 0;
    for (const expr of exprs) {
      const r = await prom.query(concreteQuery(expr));
      expect(r.status, `${expr} → ${r.error}`).toBe('success');
      if (metricNamesIn(expr).every((n) => expected.has(n))) {
        expect(r.data.result.length, `no data for ${expr}`).toBeGreaterThan(0);
        withData++;
      }
    }
    // The delivery, latency, lag and outbox panels at least.
    expect(withData).toBeGreaterThanOrEqual(8);
  });

  it('loads alerts.yml and evaluates every rule healthy; each expression runs', async () => {
    type Rule = { name: string; query: string; health: string; lastError?: string };
    const rules = await vi.waitFor(
      async () => {
        const r = await prom.api<{ data: { groups: { name: string; rules: Rule[] }[] } }>(
          '/api/v1/rules',
        );
        const all = r.data.groups.flatMap((g) => g.rules);
        expect(all.map((x) => x.name).sort()).toEqual([...alertNames].sort());
        for (const rule of all)
          expect([rule.name, rule.health, rule.lastError ?? '']).toEqual([rule.name, 'ok', '']);
        return all;
      },
      { timeout: 15_000, interval: 250 },
    );
    expect(rules.length).toBeGreaterThanOrEqual(6);
    for (const rule of rules) {
      const r = await prom.query(rule.query);
      expect(r.status, `${rule.name}: ${rule.query} → ${r.error}`).toBe('success');
    }
  });
});
