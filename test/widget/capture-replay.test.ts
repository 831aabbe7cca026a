import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminService } from '../../services/admin/index.js';
import { publicApiService } from '../../services/public-api/index.js';
import { widgetService } from '../../services/widget/index.js';
import { verifyPrincipalToken } from '../../shared/principal/index.js';
import type { RunningProcess } from '../../bin/process.js';
import { noticeBody } from '../consent/fixture.js';
import { testProcess } from '../helpers/stack.js';

/**
 * A widget capture sent again with the same Idempotency-Key: the idempotency table never holds
 * the principal token; a replay from the client address that made the capture gets a fresh,
 * valid token; a replay from another address (anyone can send the same body and key with the
 * public site key) gets the stored answer without a token.
 */

const ORIGIN = 'https://shop.example';
const token = `replay-admin-${randomBytes(12).toString('hex')}`;
let p: RunningProcess;
let appId: string;
let siteKey: string;

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Record<string, unknown>;
}

/** One request over real HTTP, sent from `from` (any 127.x address is this machine). */
function call(
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: unknown,
  from = '127.0.0.1',
): Promise<Reply> {
  const data = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${p.url}${path}`,
      {
        method,
        localAddress: from,
        headers: { ...(data ? { 'content-type': 'application/json' } : {}), ...headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: text ? (JSON.parse(text) as Record<string, unknown>) : {},
          });
        });
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

beforeAll(async () => {
  p = await testProcess('capture-replay', [adminService, widgetService, publicApiService], [], {
    SVC_ADMIN_TOKEN: token,
  });
  const admin = { authorization: `Bearer ${token}` };
  const created = await call('POST', '/api/v1/admin/apps', admin, {
    name: 'Shop',
    environment: 'sandbox',
    webhookUrl: 'http://127.0.0.1:9/hook',
    allowedOrigins: [ORIGIN],
    contactEmail: 'dpo@shop.example',
  });
  expect(created.status).toBe(201);
  appId = (created.body.app as { appId: string }).appId;
  siteKey = created.body.siteKey as string;
  const n = await call(
    'POST',
    `/api/v1/admin/apps/${appId}/notices`,
    admin,
    noticeBody('newsletter_signup', [{ name: 'essential', required: true }]),
  );
  expect(n.status).toBe(201);
});
afterAll(async () => {
  await p?.close();
});

const capture = (key: string, from?: string) =>
  call(
    'POST',
    '/api/v1/widget/capture',
    { 'x-site-key': siteKey, origin: ORIGIN, 'idempotency-key': key },
    {
      siteKey,
      processId: 'newsletter_signup',
      mode: 'silent',
      pageUrl: 'https://shop.example/signup',
    },
    from,
  );

async function storedAnswer(key: string): Promise<Record<string, unknown>> {
  const items = (
    await p.rt.dynamo.doc.send(
      new ScanCommand({ TableName: p.rt.tables.idempotency, ConsistentRead: true }),
    )
  ).Items!;
  const item = items.find((i) => String(i.pk).endsWith(`#${key}`));
  expect(item?.state).toBe('done');
  return item!;
}

/** The public API answers the principal's own listing with this token. */
async function tokenWorks(principalToken: string, referenceId: string): Promise<boolean> {
  const r = await call('GET', `/api/public/consents/my-transactions?referenceId=${referenceId}`, {
    'x-site-key': siteKey,
    origin: ORIGIN,
    authorization: `Bearer ${principalToken}`,
  });
  return r.status === 200;
}

describe('widget capture replayed with the same Idempotency-Key', () => {
  it('stores no principal token; the same client gets a fresh, working one', async () => {
    const key = `cap-${Date.now()}`;
    const first = await capture(key);
    expect(first.status).toBe(201);
    const firstToken = first.body.principalToken as string;
    expect(firstToken).toMatch(/^svc_pt_/);

    const item = await storedAnswer(key);
    expect(JSON.stringify(item)).not.toContain('svc_pt_');
    expect(JSON.stringify(item)).not.toContain(firstToken.slice(-43));

    await new Promise((r) => setTimeout(r, 5)); // a later issue time than the first token
    const again = await capture(key);
    expect(again.status).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body.consentId).toBe(first.body.consentId);
    expect(again.body.referenceId).toBe(first.body.referenceId);
    const fresh = again.body.principalToken as string;
    expect(fresh).toMatch(/^svc_pt_/);
    expect(fresh).not.toBe(firstToken);
    const v = verifyPrincipalToken(p.rt.config, fresh);
    expect(v.ok && v.claims).toMatchObject({
      appId,
      referenceId: first.body.referenceId,
      kind: 'browser',
    });
    expect(await tokenWorks(fresh, first.body.referenceId as string)).toBe(true);
  });

  it('another client address sending the same key and body gets no token', async () => {
    const key = `cap-other-${Date.now()}`;
    const first = await capture(key, '127.0.0.1');
    expect(first.status).toBe(201);
    expect(first.body.principalToken).toMatch(/^svc_pt_/);

    const stranger = await capture(key, '127.0.0.2');
    expect(stranger.status).toBe(201);
    expect(stranger.headers['idempotent-replayed']).toBe('true');
    expect(stranger.body.consentId).toBe(first.body.consentId);
    expect(stranger.body).not.toHaveProperty('principalToken');
    expect(JSON.stringify(stranger.body)).not.toContain('svc_pt_');
  });
});
