import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminService } from '../../services/admin/index.js';
import { patterns } from '../../shared/domain/ids.js';
import type { RunningProcess } from '../../bin/process.js';
import { testProcess } from '../helpers/stack.js';
import { ADMIN_TOKEN, ENCRYPTION_KEY, client, sandboxApp, type Reply } from './client.js';

/**
 * Admin answers that carry a secret key or an API key, sent with an Idempotency-Key: the
 * idempotency table (read directly in DynamoDB Local) never holds the secret, and a replay
 * answers with the same status and body, the secret masked, marked as a replay.
 */

let p: RunningProcess;
let api: ReturnType<typeof client>;

beforeAll(async () => {
  p = await testProcess('idem-secrets', [adminService], [], {
    SVC_ADMIN_TOKEN: ADMIN_TOKEN,
    SVC_ENCRYPTION_KEY: ENCRYPTION_KEY,
  });
  api = client(`${p.url}/api/v1/admin`, { authorization: `Bearer ${ADMIN_TOKEN}` });
});
afterAll(async () => {
  await p?.close();
});

/** Every item of the idempotency table, as stored. */
async function idempotencyItems(): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const r = await p.rt.dynamo.doc.send(
      new ScanCommand({
        TableName: p.rt.tables.idempotency,
        ConsistentRead: true,
        ExclusiveStartKey: start,
      }),
    );
    out.push(...(r.Items ?? []));
    start = r.LastEvaluatedKey;
  } while (start);
  return out;
}

const masked = (secret: string) =>
  `${secret.slice(0, secret.lastIndexOf('_') + 1)}…${secret.slice(-4)}`;

/** The stored answer of one key: present, done, and free of the secret. */
async function expectStoredWithout(key: string, secret: string) {
  const items = await idempotencyItems();
  const item = items.find((i) => String(i.pk).endsWith(`#${key}`));
  expect(item, `stored answer for ${key}`).toBeDefined();
  expect(item!.state).toBe('done');
  const text = JSON.stringify(items);
  expect(text).not.toContain(secret);
  expect(text).not.toMatch(/svc_(sk_(test_)?|ak_)[0-9A-Za-z]{40}/);
  expect(String(item!.body)).toContain(masked(secret));
}

function expectReplay(first: Reply, again: Reply, field: string) {
  expect(again.status).toBe(first.status);
  expect(again.headers.get('idempotent-replayed')).toBe('true');
  expect(first.headers.get('idempotent-replayed')).toBeNull();
  const secret = first.body[field] as string;
  expect(again.body).toEqual({ ...first.body, [field]: masked(secret) });
}

describe('Idempotency-Key on answers that carry a secret', () => {
  it('POST /apps: the secret key is shown once, stored nowhere in clear, masked on replay', async () => {
    const key = `create-${Date.now()}`;
    const first = await api('POST', '/apps', sandboxApp(), { 'idempotency-key': key });
    expect(first.status).toBe(201);
    expect(first.body.secretKey).toMatch(patterns.secretKey);
    await expectStoredWithout(key, first.body.secretKey);

    const again = await api('POST', '/apps', sandboxApp(), { 'idempotency-key': key });
    expectReplay(first, again, 'secretKey');
    expect(again.headers.get('location')).toBe(first.headers.get('location'));
    expect(again.body.secretKey).toMatch(/^svc_sk_test_…[0-9A-Za-z]{4}$/);
  });

  it('POST …/secret/rotate: the new secret is masked on replay and the rotation not repeated', async () => {
    const { app } = (await api('POST', '/apps', sandboxApp())).body;
    const key = `rotate-${Date.now()}`;
    const first = await api('POST', `/apps/${app.appId}/secret/rotate`, undefined, {
      'idempotency-key': key,
    });
    expect(first.status).toBe(200);
    await expectStoredWithout(key, first.body.secretKey);
    const again = await api('POST', `/apps/${app.appId}/secret/rotate`, undefined, {
      'idempotency-key': key,
    });
    expectReplay(first, again, 'secretKey');
    expect((await api('GET', `/apps/${app.appId}`)).body.secretVersion).toBe(2);
  });

  it('POST …/api-keys: the API key is masked on replay and only one key exists', async () => {
    const { app } = (await api('POST', '/apps', sandboxApp())).body;
    const key = `apikey-${Date.now()}`;
    const body = { name: 'backend', scopes: ['consents:read'] };
    const first = await api('POST', `/apps/${app.appId}/api-keys`, body, {
      'idempotency-key': key,
    });
    expect(first.status).toBe(201);
    expect(first.body.key).toMatch(patterns.apiKey);
    await expectStoredWithout(key, first.body.key);
    const again = await api('POST', `/apps/${app.appId}/api-keys`, body, {
      'idempotency-key': key,
    });
    expectReplay(first, again, 'key');
    expect(again.body.key).toMatch(/^svc_ak_…[0-9A-Za-z]{4}$/);
    expect((await api('GET', `/apps/${app.appId}/api-keys`)).body.items).toHaveLength(1);
  });
});
