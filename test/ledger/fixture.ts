import { randomBytes } from 'node:crypto';
import { expect, vi } from 'vitest';
import { adminService } from '../../services/admin/index.js';
import { consentsService } from '../../services/consents/index.js';
import { ledgerService } from '../../services/ledger/index.js';
import type { RunningProcess } from '../../bin/process.js';
import type { ServiceModule, WorkerModule } from '../../shared/module.js';
import { dispatcherWorker } from '../../workers/dispatcher/index.js';
import { relayWorker } from '../../workers/relay/index.js';
import { startReceiver, type Receiver } from '../dispatch/helpers.js';
import { testProcess } from '../helpers/stack.js';

/**
 * A real process with the admin, record and ledger APIs plus the dispatcher, delivering to a
 * loopback receiver: dispatches in the ledger come from real consent changes, and the
 * receiver's log (X-SVC-Dispatch-ID, body) is the independent record the API is checked against.
 */

export interface Reply {
  status: number;
  headers: Headers;
  text: string;
  // Response bodies are asserted field by field in the tests.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

export interface LedgerApp {
  appId: string;
  /** consents:read + consents:write */
  writer: string;
  /** ledger:read only */
  auditor: string;
  /** consents:read: everything but the ledger scope */
  reader: string;
  /** For postbacks. */
  secretKey: string;
  hookPath: string;
}

export const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

export async function startLedgerProcess(
  name: string,
  more: { services?: ServiceModule[]; workers?: WorkerModule[]; env?: Record<string, string> } = {},
) {
  const token = `ledger-admin-${randomBytes(12).toString('hex')}`;
  const rcv: Receiver = await startReceiver();
  const p: RunningProcess = await testProcess(
    name,
    [adminService, consentsService, ledgerService, ...(more.services ?? [])],
    [relayWorker, dispatcherWorker, ...(more.workers ?? [])],
    { SVC_ADMIN_TOKEN: token, WEBHOOK_TIMEOUT_MS: '2000', ...more.env },
  );

  async function call(method: string, path: string, o: { key?: string; body?: unknown } = {}) {
    const r = await fetch(`${p.url}${path}`, {
      method,
      headers: {
        ...(o.key ? bearer(o.key) : {}),
        ...(o.body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(o.body !== undefined ? { body: JSON.stringify(o.body) } : {}),
    });
    const text = await r.text();
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = undefined; // NDJSON and other non-JSON answers are read from `text`
    }
    expect(r.status, `${method} ${path} → ${text.slice(0, 500)}`).toBeLessThan(500);
    return { status: r.status, headers: r.headers, text, body } as Reply;
  }

  async function admin(method: string, path: string, body?: unknown) {
    const r = await fetch(`${p.url}/api/v1/admin${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const json = (await r.json()) as Record<string, unknown>;
    expect(r.status, JSON.stringify(json)).toBeLessThan(300);
    return json;
  }

  async function createApp(label: string): Promise<LedgerApp> {
    const hookPath = `/hooks/${label}-${randomBytes(3).toString('hex')}`;
    const created = await admin('POST', '/apps', {
      name: `Ledger ${label}`,
      environment: 'sandbox',
      webhookUrl: rcv.url(hookPath),
      allowedOrigins: ['https://shop.example'],
      contactEmail: 'dpo@shop.example',
    });
    const appId = (created.app as { appId: string }).appId;
    const key = async (scopes: string[]) =>
      (await admin('POST', `/apps/${appId}/api-keys`, { name: scopes.join('+'), scopes }))
        .key as string;
    return {
      appId,
      secretKey: created.secretKey as string,
      writer: await key(['consents:read', 'consents:write']),
      auditor: await key(['ledger:read']),
      reader: await key(['consents:read']),
      hookPath,
    };
  }

  /** Creates a user's record; returns its referenceId. */
  async function consent(a: LedgerApp, userId: string, consents: Record<string, boolean>) {
    const r = await call('POST', '/api/v1/consents', {
      key: a.writer,
      body: { userId, email: `${userId}@shop.example`, consents },
    });
    expect(r.status, r.text).toBe(201);
    return r.body.referenceId as string;
  }

  /** The dispatch ids the receiver got for an app (first delivery order, each once). */
  function delivered(a: LedgerApp): string[] {
    return [...new Set(rcv.at(a.hookPath).map((r) => String(r.headers['x-svc-dispatch-id'])))];
  }

  /**
   * Waits until the receiver has `n` dispatches of the app and the ledger API lists them all
   * as delivered (the attempt is written after the receiver answers).
   */
  async function settle(a: LedgerApp, n: number) {
    await vi.waitFor(() => expect(delivered(a)).toHaveLength(n), { timeout: 20_000 });
    await vi.waitFor(
      async () => {
        const r = await call('GET', '/api/v1/ledger/dispatches?limit=200', { key: a.auditor });
        expect(r.status).toBe(200);
        expect(r.body.items).toHaveLength(n);
        for (const d of r.body.items) expect(d.deliveryStatus).toBe('delivered');
      },
      { timeout: 15_000, interval: 100 },
    );
  }

  return {
    p,
    rcv,
    /** The operator's token for the admin API (Authorization: Bearer …). */
    adminToken: token,
    call,
    createApp,
    consent,
    delivered,
    settle,
    async close() {
      await p.close();
      rcv.releaseAll();
      await rcv.close();
    },
  };
}

export type LedgerFixture = Awaited<ReturnType<typeof startLedgerProcess>>;

/** Every page of a list query, following nextCursor; fails on a page that is not 200. */
export async function allPages(f: LedgerFixture, key: string, query: string) {
  const pages: { ids: string[]; nextCursor: string | null }[] = [];
  let cursor: string | null = null;
  do {
    const q = cursor ? `${query}&cursor=${encodeURIComponent(cursor)}` : query;
    const r = await f.call('GET', `/api/v1/ledger/dispatches?${q}`, { key });
    expect(r.status, r.text).toBe(200);
    pages.push({
      ids: r.body.items.map((d: { dispatchId: string }) => d.dispatchId),
      nextCursor: r.body.nextCursor,
    });
    cursor = r.body.nextCursor;
    expect(pages.length).toBeLessThan(100);
  } while (cursor);
  return pages;
}
