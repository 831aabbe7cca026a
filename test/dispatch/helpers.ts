import http, { type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, vi } from 'vitest';
import { createApp } from '../../shared/domain/apps.js';
import type { ConsentEvent } from '../../shared/domain/consent/events.js';
import { newEventId, newReferenceId } from '../../shared/domain/ids.js';
import type { App } from '../../shared/domain/types.js';
import { firstAttemptRecord } from '../../shared/storage/ledger/attempts.js';
import { dispatchIdFor, newDispatchState } from '../../shared/storage/ledger/dispatches.js';
import { getDispatch, type DispatchWithAttempts } from '../../shared/ledger/queries.js';
import type { RunningProcess } from '../../bin/process.js';
import type { ServiceModule } from '../../shared/module.js';
import type { Runtime } from '../../shared/runtime.js';
import { dispatcherWorker } from '../../workers/dispatcher/index.js';
import { testProcess } from '../helpers/stack.js';

export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

/** What a receiver path does with the n-th request it gets (0-based). */
export type Behaviour = (req: Received, res: ServerResponse, n: number) => void;

/**
 * A real HTTP receiver on loopback. Each path has its own behaviour (200 by default) and its
 * own request log; `open` counts requests still waiting for an answer.
 */
export async function startReceiver() {
  const received: Received[] = [];
  const behaviours = new Map<string, Behaviour>();
  const counts = new Map<string, number>();
  const hanging = new Set<ServerResponse>();
  let open = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '/';
      const r: Received = {
        path,
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        at: Date.now(),
      };
      received.push(r);
      const n = counts.get(path) ?? 0;
      counts.set(path, n + 1);
      open++;
      hanging.add(res);
      res.on('close', () => {
        open--;
        hanging.delete(res);
      });
      const b = behaviours.get(path) ?? ((_r, w) => w.end('{"ok":true}'));
      b(r, res, n);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    base,
    url: (path: string) => `${base}${path}`,
    received,
    on: (path: string, b: Behaviour) => behaviours.set(path, b),
    at: (path: string) => received.filter((r) => r.path === path),
    get open() {
      return open;
    },
    /** Answers every request left hanging (so nothing is held across tests). */
    releaseAll: () => {
      for (const res of hanging) if (!res.headersSent) res.end('{"late":true}');
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

export type Receiver = Awaited<ReturnType<typeof startReceiver>>;

export async function sandboxApp(rt: Runtime, webhookUrl: string, slaTimeScale = 1) {
  return createApp(rt, {
    name: 'dispatch test',
    environment: 'sandbox',
    webhookUrl,
    allowedOrigins: ['https://shop.example'],
    contactEmail: 'ops@shop.example',
    slaTimeScale,
  });
}

export async function liveApp(rt: Runtime, webhookUrl: string) {
  return createApp(rt, {
    name: 'dispatch live test',
    environment: 'live',
    webhookUrl,
    allowedOrigins: ['https://shop.example'],
    contactEmail: 'dpo@shop.example',
  });
}

export function consentEvent(
  app: Pick<App, 'appId' | 'environment'>,
  o: { type?: ConsentEvent['type']; referenceId?: string; createdAt?: string } = {},
): ConsentEvent {
  const type = o.type ?? 'consent.granted';
  return {
    id: newEventId(),
    type,
    apiVersion: 'v1',
    createdAt: o.createdAt ?? new Date().toISOString(),
    appId: app.appId,
    environment: app.environment,
    data: {
      referenceId: o.referenceId ?? newReferenceId(),
      userId: null,
      consentId: randomUUID(),
      sequence: 1,
      recordIds: [randomUUID()],
      purposes: { marketing: type !== 'consent.withdrawn' },
      state: { marketing: type !== 'consent.withdrawn' ? 'granted' : 'withdrawn' },
      noticeId: null,
      noticeVersion: null,
      expiresAt: null,
      ...(['consent.withdrawn', 'consent.expired', 'data.deleted'].includes(type)
        ? {
            postback: {
              required: true as const,
              dueAt: new Date(Date.now() + 3_600_000).toISOString(),
              url: 'http://localhost:8080/api/v1/server/consent/action',
            },
          }
        : {}),
    },
  };
}

/** A delivered first attempt of a new consent event, as the dispatcher records it (not written). */
export function deliveredFirstAttempt(
  rt: Runtime,
  app: Pick<App, 'appId' | 'environment'>,
  createdAt?: string,
  type?: ConsentEvent['type'],
) {
  const event = consentEvent(app, {
    ...(createdAt ? { createdAt } : {}),
    ...(type ? { type } : {}),
  });
  const nowMs = Date.now();
  const state = newDispatchState({
    event,
    body: JSON.stringify(event),
    endpoint: `${app.appId}:webhook`,
    nowMs,
  });
  return firstAttemptRecord(rt, {
    state,
    nowMs,
    deliveryStatus: 'delivered',
    entry: {
      trigger: 'first',
      time: new Date(nowMs).toISOString(),
      durationMs: 3,
      destination: 'http://127.0.0.1/hook',
      statusCode: 200,
      responseExcerpt: '',
      outcome: 'delivered',
    },
  });
}

export async function publish(
  rt: Runtime,
  events: ConsentEvent[],
  o: { key?: string; headers?: Record<string, string> } = {},
) {
  await rt.producer.send(
    events.map((e) => ({
      topic: rt.topics.consentEvents,
      key: o.key ?? `${e.appId}:${e.data.referenceId}`,
      value: JSON.stringify(e),
      ...(o.headers ? { headers: o.headers } : {}),
    })),
  );
}

/** Polls the ledger until the dispatch of `eventId`'s webhook satisfies `check`. */
export async function waitForDispatch(
  rt: Runtime,
  dispatchId: string,
  check: (d: DispatchWithAttempts) => void,
  timeout = 15_000,
): Promise<DispatchWithAttempts> {
  return vi.waitFor(
    async () => {
      const d = await getDispatch(rt, dispatchId);
      expect(d).toBeDefined();
      check(d!);
      return d!;
    },
    { timeout, interval: 50 },
  );
}

/** The dispatch id of an event at an app's webhook endpoint (as the dispatcher derives it). */
export const dispatchIdOf = (appId: string, eventId: string) =>
  dispatchIdFor(eventId, `${appId}:webhook`);

/**
 * The dispatch tests' shared setup, registered as this file's hooks: a loopback receiver and a
 * process running the dispatcher worker (and `services`, if any) with `env` on the shared stack;
 * afterwards every held request is released and both are closed. Read `p` and `rcv` inside
 * tests (set in beforeAll).
 */
export function useDispatcher(
  name: string,
  env: Record<string, string>,
  services: ServiceModule[] = [],
) {
  const f = {} as { p: RunningProcess; rcv: Receiver };
  beforeAll(async () => {
    f.rcv = await startReceiver();
    f.p = await testProcess(name, services, [dispatcherWorker], env);
  });
  afterAll(async () => {
    f.rcv?.releaseAll();
    await f.p?.close();
    await f.rcv?.close();
  });
  return f;
}
