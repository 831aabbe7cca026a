import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { expect } from 'vitest';
import { adminService } from '../../services/admin/index.js';
import { consentsService } from '../../services/consents/index.js';
import { portalService } from '../../services/portal/index.js';
import { publicApiService } from '../../services/public-api/index.js';
import { listTransactions, type TransactionView } from '../../shared/domain/consent/index.js';
import type { App } from '../../shared/domain/types.js';
import { issuePrincipalToken } from '../../shared/principal/index.js';
import { startProcess } from '../../bin/process.js';
import type { ServiceModule, WorkerModule } from '../../shared/module.js';
import { collectTopic } from '../helpers/kafka.js';
import { testConfig, testLogger } from '../helpers/stack.js';
import { documentOrigin } from '../helpers/openapi-check.js';

/**
 * A real process with the admin, record, public and portal APIs (plus any workers), on a port
 * chosen up front so PUBLIC_BASE_URL (the origin of links in e-mails) is the process itself.
 */

export interface PortalApp {
  app: App;
  secretKey: string;
  /** Record API key (consents:read + consents:write). */
  key: string;
}

export interface Principal {
  referenceId: string;
  transaction: TransactionView;
  /** recordId by purpose. */
  records: Record<string, string>;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

export async function startPortalStack(
  name: string,
  o: { workers?: WorkerModule[]; services?: ServiceModule[]; env?: Record<string, string> } = {},
) {
  const token = `portal-admin-${randomBytes(12).toString('hex')}`;
  const port = await freePort();
  const config = testConfig(name, {
    SVC_ADMIN_TOKEN: token,
    PORT: String(port),
    PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
    ...o.env,
  });
  const p = await startProcess({
    name,
    services: [
      adminService,
      consentsService,
      publicApiService,
      portalService,
      ...(o.services ?? []),
    ],
    workers: o.workers ?? [],
    config,
    log: testLogger(config),
  });
  documentOrigin(p.url);
  const events = await collectTopic(p.rt.kafka, p.rt.topics.consentEvents);

  async function json(
    method: string,
    path: string,
    headers: Record<string, string>,
    body?: unknown,
  ) {
    const r = await fetch(`${p.url}${path}`, {
      method,
      headers: {
        ...headers,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await r.text();
    expect(r.status, `${method} ${path} → ${text}`).toBeLessThan(300);
    return JSON.parse(text) as Record<string, unknown>;
  }
  const admin = (method: string, path: string, body?: unknown) =>
    json(method, `/api/v1/admin${path}`, { authorization: `Bearer ${token}` }, body);
  /** Apps created here, for the secret version their tokens are issued under. */
  const apps = new Map<string, App>();

  async function createApp(extra: Record<string, unknown> = {}): Promise<PortalApp> {
    const created = await admin('POST', '/apps', {
      name: 'Shop & Co',
      environment: 'sandbox',
      webhookUrl: 'http://127.0.0.1:9/hook',
      allowedOrigins: ['https://shop.example'],
      contactEmail: 'dpo@shop.example',
      ...extra,
    });
    const app = created.app as App;
    apps.set(app.appId, app);
    const key = await admin('POST', `/apps/${app.appId}/api-keys`, {
      name: 'rw',
      scopes: ['consents:read', 'consents:write'],
    });
    return { app, secretKey: created.secretKey as string, key: key.key as string };
  }

  /** A principal created through the record API (so it has an e-mail address). */
  async function createPrincipal(
    t: PortalApp,
    email = `user-${randomBytes(4).toString('hex')}@example.test`,
    consents: Record<string, boolean> = { analytics: true, marketing: true },
  ): Promise<Principal> {
    const userId = `u-${randomBytes(6).toString('hex')}`;
    const rec = await json(
      'POST',
      '/api/v1/consents',
      { authorization: `Bearer ${t.key}` },
      { userId, email, consents },
    );
    const referenceId = rec.referenceId as string;
    const { items } = await listTransactions(p.rt, t.app.appId, referenceId, { limit: 10 });
    const transaction = items[0]!;
    const records = Object.fromEntries(transaction.records.map((r) => [r.purpose, r.recordId]));
    return { referenceId, transaction, records };
  }

  /**
   * A portal token as the notifier puts in links; a ttlMs of 0 or less gives one that expired
   * that long ago (issued a minute before it expired).
   */
  const tokenFor = (appId: string, referenceId: string, ttlMs = 3_600_000) => {
    const app = { appId, secretVersion: apps.get(appId)?.secretVersion ?? 1 };
    const o =
      ttlMs > 0
        ? { kind: 'portal' as const, ttlMs }
        : { kind: 'portal' as const, ttlMs: 60_000, now: new Date(Date.now() + ttlMs - 60_000) };
    return issuePrincipalToken(p.rt.config, app, referenceId, o).token;
  };

  return {
    p,
    url: p.url,
    admin,
    createApp,
    createPrincipal,
    tokenFor,
    events: events.messages,
    async close() {
      await events.stop();
      await p.close();
    },
  };
}

export type PortalStack = Awaited<ReturnType<typeof startPortalStack>>;
