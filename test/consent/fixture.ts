import { randomBytes } from 'node:crypto';
import { GetCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, expect, vi } from 'vitest';
import { adminService } from '../../services/admin/index.js';
import { consentsService } from '../../services/consents/index.js';
import { publicApiService } from '../../services/public-api/index.js';
import {
  captureConsent,
  consentEventSchema,
  type CaptureInput,
  type ConsentEvent,
} from '../../shared/domain/consent/index.js';
import type { App, NoticeVersion } from '../../shared/domain/types.js';
import { historyOf } from '../../shared/domain/consent/carried.js';
import type { StoredTransaction } from '../../shared/domain/consent/model.js';
import { keys } from '../../shared/storage/consents/repository.js';
import type { Runtime } from '../../shared/runtime.js';
import { getReferenceKey } from '../../shared/domain/apps.js';
import { DynamoConsentStore } from '../../shared/storage/consents/store.js';
import type { Outbox } from '../../shared/storage/outbox/outbox.js';
import { ensureFamily } from '../../shared/storage/timers/due.js';
import type { RunningProcess } from '../../bin/process.js';
import type { ServiceModule } from '../../shared/module.js';
import { collectTopic } from '../helpers/kafka.js';
import { testProcess } from '../helpers/stack.js';

/** A real process with the admin, record and public APIs, plus helpers to drive it over HTTP. */

export interface Reply {
  status: number;
  headers: Headers;
  // Response bodies are asserted field by field in the tests.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

export interface TestApp {
  app: App;
  siteKey: string;
  secretKey: string;
  /** consents:read + consents:write */
  key: string;
  keyId: string;
  readOnlyKey: string;
  writeOnlyKey: string;
  origin: string;
  notice?: NoticeVersion;
}

export const ORIGIN = 'https://shop.example';

export function noticeBody(triggerKey: string, purposes: { name: string; required?: boolean }[]) {
  const labels = Object.fromEntries(
    purposes.map((p) => [p.name, { label: p.name, description: `Why we need ${p.name}` }]),
  );
  return {
    kind: 'data_collection',
    triggerKey,
    defaultLanguage: 'en',
    purposes: purposes.map((p) => ({ name: p.name, required: p.required ?? false, dataItems: [] })),
    translations: {
      en: { title: 'Your data', body: 'We use it for:', purposes: labels },
      hi: { title: 'आपका डेटा', body: 'हम इसका उपयोग करते हैं:', purposes: labels },
    },
    validityDays: 180,
  };
}

export async function startConsentProcess(
  name: string,
  o: { services?: ServiceModule[]; env?: Record<string, string> } = {},
) {
  const token = `consent-admin-${randomBytes(12).toString('hex')}`;
  const p: RunningProcess = await testProcess(
    name,
    [adminService, consentsService, publicApiService, ...(o.services ?? [])],
    [],
    { SVC_ADMIN_TOKEN: token, ...o.env },
  );
  const collector = await collectTopic(p.rt.kafka, p.rt.topics.consentEvents);

  /** Any call; every answer is checked to be below 500 (no 5xx anywhere). */
  async function call(
    method: string,
    path: string,
    o: { headers?: Record<string, string>; body?: unknown; raw?: string } = {},
  ): Promise<Reply> {
    const headers: Record<string, string> = { ...o.headers };
    let body: string | undefined = o.raw;
    if (o.body !== undefined) {
      body = JSON.stringify(o.body);
      headers['content-type'] ??= 'application/json';
    } else if (o.raw !== undefined) headers['content-type'] ??= 'application/json';
    const r = await fetch(`${p.url}${path}`, { method, headers, body });
    const text = await r.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      /* not JSON: keep the text */
    }
    expect(r.status, `${method} ${path} → ${text}`).toBeLessThan(500);
    return { status: r.status, headers: r.headers, body: parsed };
  }

  async function admin(method: string, path: string, body?: unknown) {
    const r = await call(method, `/api/v1/admin${path}`, {
      headers: { authorization: `Bearer ${token}` },
      ...(body === undefined ? {} : { body }),
    });
    expect(r.status, JSON.stringify(r.body)).toBeLessThan(300);
    return r.body;
  }

  async function createApp(
    o: {
      notice?: { triggerKey: string; purposes: { name: string; required?: boolean }[] };
      slaTimeScale?: number;
    } = {},
  ): Promise<TestApp> {
    const created = await admin('POST', '/apps', {
      name: 'Shop',
      environment: 'sandbox',
      webhookUrl: 'http://127.0.0.1:9/hook',
      allowedOrigins: [ORIGIN],
      contactEmail: 'dpo@shop.example',
      ...(o.slaTimeScale ? { slaTimeScale: o.slaTimeScale } : {}),
    });
    const appId = created.app.appId as string;
    const key = async (scopes: string[]) =>
      admin('POST', `/apps/${appId}/api-keys`, { name: scopes.join('+'), scopes });
    const rw = await key(['consents:read', 'consents:write']);
    const ro = await key(['consents:read']);
    const wo = await key(['consents:write']);
    const notice = o.notice
      ? ((await admin(
          'POST',
          `/apps/${appId}/notices`,
          noticeBody(o.notice.triggerKey, o.notice.purposes),
        )) as NoticeVersion)
      : undefined;
    return {
      app: created.app,
      siteKey: created.siteKey,
      secretKey: created.secretKey,
      key: rw.key,
      keyId: rw.id,
      readOnlyKey: ro.key,
      writeOnlyKey: wo.key,
      origin: ORIGIN,
      ...(notice ? { notice } : {}),
    };
  }

  /** A principal token for `referenceId`, minted as the app's server would (secret key). */
  async function mintToken(t: TestApp, referenceId: string, ttlSeconds?: number): Promise<string> {
    const r = await call('POST', '/api/public/consents/principal-tokens', {
      headers: { 'x-secret-key': t.secretKey },
      body: { referenceId, ...(ttlSeconds === undefined ? {} : { ttlSeconds }) },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return r.body.token as string;
  }

  /** Events on the real topic for one principal, in Kafka order, validated against the schema. */
  function eventsOf(referenceId: string): ConsentEvent[] {
    return collector.messages
      .filter((m) => (m.value as ConsentEvent | undefined)?.data?.referenceId === referenceId)
      .map((m) => {
        expect(m.key).toBe(`${(m.value as ConsentEvent).appId}:${referenceId}`);
        return consentEventSchema.parse(m.value);
      });
  }

  async function waitForEvents(referenceId: string, count: number): Promise<ConsentEvent[]> {
    return vi.waitFor(
      () => {
        const e = eventsOf(referenceId);
        expect(e.length).toBeGreaterThanOrEqual(count);
        return e;
      },
      { timeout: 15_000, interval: 50 },
    );
  }

  /** Every item of an app in `entities`, by kind (principal, user, transaction, record). */
  async function itemsOf(appId: string) {
    const out: Record<string, unknown>[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const r = await p.rt.dynamo.doc.send(
        new ScanCommand({
          TableName: p.rt.tables.entities,
          FilterExpression: 'begins_with(pk, :p)',
          ExpressionAttributeValues: { ':p': `APP#${appId}#` },
          ConsistentRead: true,
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      );
      out.push(...(r.Items ?? []));
      start = r.LastEvaluatedKey;
    } while (start);
    const kinds = (k: string) => out.filter((i) => i.kind === k);
    /** The history entries kept in the transaction items, each with its transactionId. */
    const history = (): Record<string, unknown>[] =>
      kinds('transaction').flatMap((t) =>
        (historyOf(t as unknown as StoredTransaction) as unknown as Record<string, unknown>[]).map(
          (h) => ({
            ...h,
            transactionId: t.transactionId,
          }),
        ),
      );
    return { all: out, kinds, history };
  }

  return {
    p,
    call,
    admin,
    createApp,
    mintToken,
    eventsOf,
    waitForEvents,
    itemsOf,
    messages: collector.messages,
    async close() {
      await collector.stop();
      await p.close();
    },
  };
}

export type ConsentFixture = Awaited<ReturnType<typeof startConsentProcess>>;

/** A transaction item as stored in `entities` (consistent read), or undefined. */
export async function transactionItem(
  rt: Runtime,
  appId: string,
  referenceId: string,
  transactionId: string,
): Promise<Record<string, unknown> | undefined> {
  const r = await rt.dynamo.doc.send(
    new GetCommand({
      TableName: rt.tables.entities,
      Key: keys.transaction(appId, referenceId, transactionId),
      ConsistentRead: true,
    }),
  );
  return r.Item;
}

/** `rt` with its consent store writing through `outbox` (a writer of the test's own). */
export function writingThrough(rt: Runtime, outbox: Outbox): Runtime {
  const consents = new DynamoConsentStore({
    ...rt,
    outbox,
    referenceKey: (appId) => getReferenceKey(rt, appId),
    ensureTimers: (nowMs) => ensureFamily(rt, 'expiry', rt.config.TIMER_SHARDS, nowMs),
  });
  return { ...rt, outbox, consents };
}

export const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
export const secret = (t: TestApp) => ({ 'x-secret-key': t.secretKey });
/** The browser path: site key, an Origin (any caller can send one) and a principal token. */
export const browser = (t: TestApp, token?: string, origin = t.origin) => ({
  'x-site-key': t.siteKey,
  origin,
  ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
});

/**
 * The public API tests' shared setup: a consent process and one sandbox app (time scale 3600:
 * a 1 h postback window is 1 s) with a `signup` notice of three purposes (essential required,
 * analytics, marketing). `capture` records a widget capture directly; `op` POSTs to
 * `/api/public/consents/my-transactions{path}`, with the secret key unless told otherwise.
 * Read `pub.f` and `pub.a` inside tests (set in beforeAll).
 */
export function usePublicApi(name: string) {
  const pub = {} as { f: ConsentFixture; a: TestApp };
  beforeAll(async () => {
    pub.f = await startConsentProcess(name);
    pub.a = await pub.f.createApp({
      slaTimeScale: 3600,
      notice: {
        triggerKey: 'signup',
        purposes: [
          { name: 'essential', required: true },
          { name: 'analytics' },
          { name: 'marketing' },
        ],
      },
    });
  });
  afterAll(async () => {
    await pub.f?.close();
  });
  const input = (o: Partial<CaptureInput> = {}): CaptureInput => ({
    mode: 'granular',
    granted: ['essential', 'analytics'],
    language: 'en',
    pageUrl: 'https://shop.example/signup',
    userAgent: 'vitest',
    ipHash: 'iphash',
    ...o,
  });
  const capture = (o: Partial<CaptureInput> = {}) =>
    captureConsent(pub.f.p.rt, pub.a.app, pub.a.notice as NoticeVersion, input(o));
  const op = (path: string, body: unknown = {}, headers: Record<string, string> = secret(pub.a)) =>
    pub.f.call('POST', `${PUBLIC_TRANSACTIONS}${path}`, { headers, body });
  return { pub, capture, op };
}

export const PUBLIC_TRANSACTIONS = '/api/public/consents/my-transactions';

/**
 * The record API tests' shared setup: a consent process with two apps, `a` with no notice (any
 * purpose) and `n` with a `newsletter_signup` notice (analytics, marketing, essential
 * required: only its purposes are allowed). `post`, `get`, `put` and `del` call
 * `/api/v1/consents[/{userId}]` with the app's read-write key unless given another. Read
 * `rec.f`, `rec.a` and `rec.n` inside tests (set in beforeAll).
 */
export function useRecordApi(name: string, env?: Record<string, string>) {
  const rec = {} as { f: ConsentFixture; a: TestApp; n: TestApp };
  beforeAll(async () => {
    rec.f = await startConsentProcess(name, env ? { env } : {});
    rec.a = await rec.f.createApp();
    rec.n = await rec.f.createApp({
      notice: {
        triggerKey: 'newsletter_signup',
        purposes: [
          { name: 'analytics' },
          { name: 'marketing' },
          { name: 'essential', required: true },
        ],
      },
    });
  });
  afterAll(async () => {
    await rec.f?.close();
  });
  const one = (userId: string) => `/api/v1/consents/${encodeURIComponent(userId)}`;
  return {
    rec,
    uid: () => `user-${Math.random().toString(36).slice(2, 10)}@shop.example`,
    post: (t: TestApp, body: unknown, key = t.key) =>
      rec.f.call('POST', '/api/v1/consents', { headers: bearer(key), body }),
    get: (t: TestApp, userId: string, key = t.key) =>
      rec.f.call('GET', one(userId), { headers: bearer(key) }),
    put: (t: TestApp, userId: string, body: unknown, key = t.key) =>
      rec.f.call('PUT', one(userId), { headers: bearer(key), body }),
    del: (t: TestApp, userId: string, key = t.key) =>
      rec.f.call('DELETE', one(userId), { headers: bearer(key) }),
  };
}
