import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { adminService } from '../../services/admin/index.js';
import { consentsService } from '../../services/consents/index.js';
import { createLogger } from '../../shared/logger.js';
import type { RunningProcess } from '../../bin/process.js';
import { startTelemetry } from '../../shared/telemetry.js';
import { dispatcherWorker } from '../../workers/dispatcher/index.js';
import { collectTopic } from '../helpers/kafka.js';
import { testProcess } from '../helpers/stack.js';

/**
 * One trace follows an event from HTTP ingress through the outbox and Kafka to the webhook
 * attempt: a real OpenTelemetry SDK collects the spans in memory.
 */
const exporter = new InMemorySpanExporter();
const telemetry = startTelemetry({}, createLogger({ level: 'silent' }), [
  new SimpleSpanProcessor({ exporter }),
]);
const token = `trace-admin-${randomBytes(12).toString('hex')}`;
let p: RunningProcess;
let server: http.Server;
const hooks: { traceparent?: string; event: string }[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      hooks.push({ event: String(req.headers['x-svc-event']) });
      res.end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  p = await testProcess('tracing', [adminService, consentsService], [dispatcherWorker], {
    SVC_ADMIN_TOKEN: token,
  });
});
afterAll(async () => {
  await p?.close();
  server.close();
  await telemetry.shutdown();
});

describe('tracing from ingress to webhook', () => {
  it('continues the caller trace through Kafka headers into each webhook attempt', async () => {
    const events = await collectTopic(p.rt.kafka, p.rt.topics.consentEvents);
    const admin = async (path: string, body: unknown) => {
      const r = await fetch(`${p.url}/api/v1/admin${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      expect(r.status).toBe(201);
      return (await r.json()) as Record<string, unknown>;
    };
    const created = await admin('/apps', {
      name: 'Traced',
      environment: 'sandbox',
      webhookUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
      allowedOrigins: ['https://shop.example'],
      contactEmail: 'ops@shop.example',
    });
    const appId = (created.app as { appId: string }).appId;
    const key = (await admin(`/apps/${appId}/api-keys`, { name: 'k', scopes: ['consents:write'] }))
      .key as string;

    const traceId = randomBytes(16).toString('hex');
    const r = await fetch(`${p.url}/api/v1/consents`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01`,
      },
      body: JSON.stringify({
        userId: 'traced-user',
        email: 't@example.com',
        consents: { a: true },
      }),
    });
    expect(r.status).toBe(201);

    await vi.waitFor(
      () =>
        expect(hooks.map((h) => h.event).sort()).toEqual(['consent.created', 'consent.granted']),
      {
        timeout: 20_000,
      },
    );
    // The events on Kafka carry the caller's trace.
    await vi.waitFor(() => {
      const mine = events.messages.filter((m) => (m.value as { appId?: string }).appId === appId);
      expect(mine).toHaveLength(2);
      for (const m of mine) expect(m.headers.traceparent).toMatch(new RegExp(`^00-${traceId}-`));
    });
    await vi.waitFor(() => {
      const spans = exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
      const names = spans.map((s) => s.name);
      expect(names).toContain('POST /api/v1/consents');
      expect(names.filter((n) => n === 'webhook attempt')).toHaveLength(2);
    });
    await events.stop();
  });
});
