import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { adminService } from '../../services/admin/index.js';
import { noticeBody as noticeSchema } from '../../services/admin/schemas.js';
import { consentsService } from '../../services/consents/index.js';
import { postbackService } from '../../services/postback/index.js';
import { publicApiService } from '../../services/public-api/index.js';
import { widgetService } from '../../services/widget/index.js';
import { POSTBACK_PATH } from '../../shared/domain/consent/events.js';
import { createApiKey } from '../../shared/domain/apiKeys.js';
import { createApp } from '../../shared/domain/apps.js';
import { newDispatchId, newReferenceId } from '../../shared/domain/ids.js';
import { createNotice } from '../../shared/domain/notices.js';
import type { RunningProcess } from '../../bin/process.js';
import { client, type Reply } from '../admin/client.js';
import { noticeBody } from '../consent/fixture.js';
import { testProcess } from '../helpers/stack.js';

/**
 * Rate limits over real HTTP (docs/security.md, Rate limits): budgets per app AND credential class,
 * anonymous capture also per client IP, failed authentications per client address (the admin token
 * included). Client addresses are given with X-Forwarded-For, which the service believes from
 * loopback (its default `trust proxy`).
 */

const ORIGIN = 'https://shop.example';
const token = `rl-admin-${randomBytes(12).toString('hex')}`;
let p: RunningProcess;
let http: ReturnType<typeof client>;

beforeAll(async () => {
  p = await testProcess(
    'rate-limits',
    [adminService, consentsService, postbackService, publicApiService, widgetService],
    [],
    {
      SVC_ADMIN_TOKEN: token,
      RATE_LIMIT_RPS: '0.01',
      RATE_LIMIT_BURST: '6',
      RATE_LIMIT_CAPTURE_PER_IP_RPS: '0.01',
      RATE_LIMIT_CAPTURE_PER_IP_BURST: '3',
      RATE_LIMIT_AUTH_FAILURE_RPS: '0.01',
      RATE_LIMIT_AUTH_FAILURE_BURST: '5',
    },
  );
  http = client(p.url);
  // The first capture of a process waits for Kafka's producer: let that happen here.
  const warm = await app();
  let n = 0;
  await vi.waitFor(async () => expect((await capture(warm, `192.0.2.${++n}`)).status).toBe(201), {
    timeout: 30_000,
    interval: 200,
  });
});
afterAll(async () => {
  await p?.close();
});

const from = (ip: string) => ({ 'x-forwarded-for': ip });
const admin = (method: string, path: string) =>
  http(method, `/api/v1/admin${path}`, undefined, {
    authorization: `Bearer ${token}`,
    ...from('192.0.2.1'),
  });

/**
 * A sandbox app with a notice, an API key and its secret key, made through the domain
 * functions: the admin API's own budget is small here.
 */
async function app() {
  const { app: created, secretKey } = await createApp(p.rt, {
    name: 'Shop',
    environment: 'sandbox',
    webhookUrl: 'http://127.0.0.1:9/hook',
    allowedOrigins: [ORIGIN],
    contactEmail: 'dpo@shop.example',
  });
  await createNotice(
    p.rt,
    created.appId,
    noticeSchema.parse(noticeBody('signup', [{ name: 'marketing' }])),
  );
  const { key } = await createApiKey(p.rt, created.appId, {
    name: 'backend',
    scopes: ['consents:read'],
  });
  return { appId: created.appId, siteKey: created.siteKey, secretKey, apiKey: key };
}

type TestApp = Awaited<ReturnType<typeof app>>;

const capture = (a: TestApp, ip: string) =>
  http(
    'POST',
    '/api/v1/widget/capture',
    {
      siteKey: a.siteKey,
      processId: 'signup',
      mode: 'silent',
      language: 'en',
      pageUrl: 'https://shop.example/signup',
    },
    { origin: ORIGIN, ...from(ip) },
  );

/** A postback with the secret key: 404 (no such dispatch) once it passed the rate limit. */
const secretKeyCall = (a: TestApp, ip = '198.51.100.7') =>
  http(
    'POST',
    POSTBACK_PATH,
    {
      dispatchId: newDispatchId(),
      referenceId: newReferenceId(),
      status: 'processed',
      completedAt: new Date().toISOString(),
      risk: 'none',
      tags: [],
      actions: [],
    },
    { 'x-secret-key': a.secretKey, ...from(ip) },
  );

const apiKeyCall = (a: TestApp, ip = '198.51.100.8') =>
  http('GET', '/api/v1/consents/nobody', undefined, {
    authorization: `Bearer ${a.apiKey}`,
    ...from(ip),
  });

function expect429(r: Reply) {
  expect(r.status, JSON.stringify(r.body)).toBe(429);
  expect(r.body.code).toBe('SVC_RATE_LIMITED');
  expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
}

describe('budgets per app and credential class', () => {
  it('an anonymous browser flood never makes the secret-key or API-key path 429', async () => {
    const a = await app();
    // Anyone can capture, and a capture hands out a principal token for the new principal.
    const captured = await capture(a, '203.0.113.1');
    expect(captured.status).toBe(201);
    const { referenceId, principalToken } = captured.body as {
      referenceId: string;
      principalToken?: string;
    };
    const path = `/api/public/consents/my-transactions?referenceId=${referenceId}`;
    const statuses: number[] = [];
    // From many addresses, so only the app's budget can stop them.
    for (let i = 0; i < 20; i++)
      statuses.push(
        (
          await http('GET', path, undefined, {
            'x-site-key': a.siteKey,
            origin: ORIGIN,
            ...(principalToken ? { authorization: `Bearer ${principalToken}` } : {}),
            ...from(`203.0.113.${i + 2}`),
          })
        ).status,
      );
    expect(statuses.slice(0, 4)).toEqual([200, 200, 200, 200]);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(12);

    // The app's own server (same routes, same process) and its record API client still have
    // their whole budget.
    for (let i = 0; i < 5; i++) {
      const server = await http('GET', path, undefined, {
        'x-secret-key': a.secretKey,
        ...from('198.51.100.7'),
      });
      expect(server.status, JSON.stringify(server.body)).toBe(200);
      expect((await apiKeyCall(a)).status).toBe(404);
    }
  });

  it('anonymous capture is also limited per client address', async () => {
    const a = await app();
    const one = [];
    for (let i = 0; i < 5; i++) one.push((await capture(a, '203.0.113.50')).status);
    expect(one.slice(0, 3)).toEqual([201, 201, 201]);
    expect(one.slice(3)).toEqual([429, 429]);
    // Another address still captures: the app's browser budget was not spent by the refusals.
    expect((await capture(a, '203.0.113.51')).status).toBe(201);
    expect((await capture(a, '203.0.113.52')).status).toBe(201);
  });
});

describe('failed authentications per client address', () => {
  it('many bad secret keys from one address get 429 SVC_RATE_LIMITED + Retry-After', async () => {
    const a = await app();
    const bad = () =>
      http(
        'POST',
        POSTBACK_PATH,
        {},
        {
          'x-secret-key': `svc_sk_test_${randomBytes(30).toString('base64url').replace(/[-_]/g, 'x').slice(0, 40)}`,
          ...from('203.0.113.99'),
        },
      );
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await bad()).status);
    expect(statuses).toEqual([401, 401, 401, 401, 401]);
    expect429(await bad());
    // Even a right key waits while its address is over the limit...
    expect429(await secretKeyCall(a, '203.0.113.99'));
    // ...but other addresses are not affected.
    expect((await bad().then(() => secretKeyCall(a, '203.0.113.98'))).status).toBe(404);
  });

  it('many bad API keys and bad site keys count together', async () => {
    const ip = '203.0.113.120';
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++)
      statuses.push(
        (
          await http('GET', '/api/v1/consents/x', undefined, {
            authorization: `Bearer svc_ak_${'A'.repeat(39)}${i}`,
            ...from(ip),
          })
        ).status,
      );
    for (let i = 0; i < 2; i++)
      statuses.push(
        (
          await http('GET', '/api/v1/widget/config/signup', undefined, {
            'x-site-key': `APP_${'B'.repeat(23)}${i}`,
            origin: ORIGIN,
            ...from(ip),
          })
        ).status,
      );
    expect(statuses).toEqual([401, 401, 401, 401, 401]);
    expect429(
      await http('GET', '/api/v1/consents/x', undefined, {
        authorization: 'Bearer svc_ak_nope',
        ...from(ip),
      }),
    );
  });

  it('guards the admin token the same way', async () => {
    const ip = '203.0.113.140';
    const guess = (i: number) =>
      http('GET', '/api/v1/admin/apps/app_00000000000000000000', undefined, {
        authorization: `Bearer guess-${i}-0123456789abcdef`,
        ...from(ip),
      });
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await guess(i)).status);
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429]);
    const right = await http('GET', '/api/v1/admin/apps/app_00000000000000000000', undefined, {
      authorization: `Bearer ${token}`,
      ...from(ip),
    });
    expect429(right);
    // The operator elsewhere is not locked out.
    expect((await admin('GET', '/apps/app_00000000000000000000')).status).toBe(404);
  });
});
