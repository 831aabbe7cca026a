import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminService } from '../../services/admin/index.js';
import { decrypt, parseKey, sha256hex } from '../../shared/domain/crypto.js';
import { patterns } from '../../shared/domain/ids.js';
import { declaredPurposes, getNotice, getNoticeByTriggerKey } from '../../shared/domain/notices.js';
import type { RunningProcess } from '../../bin/process.js';
import { testProcess } from '../helpers/stack.js';
import { ADMIN_TOKEN, ENCRYPTION_KEY, client, notice, sandboxApp, type Reply } from './client.js';

let p: RunningProcess;
let api: ReturnType<typeof client>;

beforeAll(async () => {
  p = await testProcess('admin', [adminService], [], {
    SVC_ADMIN_TOKEN: ADMIN_TOKEN,
    SVC_ENCRYPTION_KEY: ENCRYPTION_KEY,
  });
  api = client(`${p.url}/api/v1/admin`, { authorization: `Bearer ${ADMIN_TOKEN}` });
});
afterAll(async () => {
  await p?.close();
});

const paths = (r: Reply) => (r.body.errors as { path: string }[]).map((e) => e.path).sort();

async function storedApp(appId: string) {
  const r = await p.rt.dynamo.doc.send(
    new GetCommand({ TableName: p.rt.tables.entities, Key: { pk: `APP#${appId}`, sk: 'APP' } }),
  );
  return r.Item!;
}

describe('admin authentication', () => {
  it('refuses a missing or wrong token with 401 problem+json', async () => {
    const bare = client(`${p.url}/api/v1/admin`);
    for (const headers of [
      {},
      { authorization: 'Bearer wrong-token-0123456789' },
      { authorization: ADMIN_TOKEN },
    ] as Record<string, string>[]) {
      const r = await bare('POST', '/apps', sandboxApp(), headers);
      expect(r.status).toBe(401);
      expect(r.body).toMatchObject({ code: 'SVC_UNAUTHORIZED', status: 401 });
      expect(r.headers.get('content-type')).toContain('application/problem+json');
      expect(r.headers.get('www-authenticate')).toBe('Bearer');
    }
    expect((await bare('GET', '/apps/app_00000000000000000000')).status).toBe(401);
  });
});

describe('apps', () => {
  it('creates a sandbox app, shows the secret once and stores it only encrypted', async () => {
    const r = await api('POST', '/apps', sandboxApp({ slaTimeScale: 3600 }));
    expect(r.status).toBe(201);
    const { app, siteKey, secretKey } = r.body;
    expect(app.appId).toMatch(patterns.appId);
    expect(siteKey).toMatch(patterns.siteKey);
    expect(secretKey).toMatch(/^svc_sk_test_[0-9A-Za-z]{40}$/);
    expect(app).toMatchObject({
      name: 'Shop',
      environment: 'sandbox',
      siteKey,
      slaTimeScale: 3600,
      secretVersion: 1,
      widgetVerifiedAt: null,
    });
    expect(JSON.stringify(r.body.app)).not.toContain(secretKey);
    expect(app).not.toHaveProperty('secretKeyEnc');
    expect(r.headers.get('location')).toBe(`/api/v1/admin/apps/${app.appId}`);

    const got = await api('GET', `/apps/${app.appId}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(app);

    const item = await storedApp(app.appId);
    expect(JSON.stringify(item)).not.toContain(secretKey);
    expect(item.gsi2pk).toBe(`SECRET#${sha256hex(secretKey)}`);
    expect(decrypt(parseKey(ENCRYPTION_KEY)!, item.secretKeyEnc, `app:${app.appId}`)).toBe(
      secretKey,
    );
  });

  it('applies the live rules: https webhook, no time scale, live secret prefix', async () => {
    const bad = await api(
      'POST',
      '/apps',
      sandboxApp({ environment: 'live', webhookUrl: 'http://shop.example/h', slaTimeScale: 60 }),
    );
    expect(bad.status).toBe(422);
    expect(paths(bad)).toEqual(['/slaTimeScale', '/webhookUrl']);

    const ok = await api(
      'POST',
      '/apps',
      sandboxApp({ environment: 'live', webhookUrl: 'https://shop.example/h' }),
    );
    expect(ok.status).toBe(201);
    expect(ok.body.secretKey).toMatch(/^svc_sk_[0-9A-Za-z]{40}$/);
    expect(ok.body.app.slaTimeScale).toBe(1);

    const patch = await api('PATCH', `/apps/${ok.body.app.appId}`, {
      webhookUrl: 'http://shop.example/h2',
    });
    expect(patch.status).toBe(422);
    expect(paths(patch)).toEqual(['/webhookUrl']);
  });

  it('answers 422 with the failing paths', async () => {
    const r = await api('POST', '/apps', {
      ...sandboxApp(),
      environment: 'prod',
      allowedOrigins: ['https://ok.example', 'https://shop.example/path'],
      contactEmail: 'nope',
      webhookUrl: 'not a url',
    });
    expect(r.status).toBe(422);
    expect(r.body.code).toBe('SVC_VALIDATION_FAILED');
    expect(paths(r)).toEqual(['/allowedOrigins/1', '/contactEmail', '/environment', '/webhookUrl']);
  });

  it('patches settings but never the environment', async () => {
    const { app } = (
      await api(
        'POST',
        '/apps',
        sandboxApp({ portalUrlTemplate: 'https://shop.example/p/{referenceId}' }),
      )
    ).body;
    const r = await api('PATCH', `/apps/${app.appId}`, {
      name: 'Shop 2',
      allowedOrigins: ['https://a.example', 'http://localhost:3000'],
      portalUrlTemplate: null,
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      appId: app.appId,
      name: 'Shop 2',
      allowedOrigins: ['https://a.example', 'http://localhost:3000'],
      webhookUrl: app.webhookUrl,
      siteKey: app.siteKey,
    });
    expect(r.body).not.toHaveProperty('portalUrlTemplate');
    expect(r.body).not.toHaveProperty('secretKeyEnc');
    expect(r.body.updatedAt >= app.updatedAt).toBe(true);
    expect((await api('GET', `/apps/${app.appId}`)).body).toEqual(r.body);

    const env = await api('PATCH', `/apps/${app.appId}`, { environment: 'live' });
    expect(env.status).toBe(422);
    expect(paths(env)).toEqual(['/environment']);
    expect((await api('GET', `/apps/${app.appId}`)).body.environment).toBe('sandbox');
  });

  it('answers 404 for unknown apps', async () => {
    for (const [method, path, body] of [
      ['GET', '/apps/app_00000000000000000000'],
      ['GET', '/apps/not-an-id'],
      ['PATCH', '/apps/app_00000000000000000000', { name: 'x' }],
      ['POST', '/apps/app_00000000000000000000/secret/rotate'],
      ['POST', '/apps/app_00000000000000000000/api-keys', { name: 'k', scopes: ['ledger:read'] }],
      ['GET', '/apps/app_00000000000000000000/api-keys'],
      ['POST', '/apps/app_00000000000000000000/notices', notice()],
      ['GET', '/apps/app_00000000000000000000/notices'],
    ] as const) {
      const r = await api(method, path, body);
      expect(r.status, `${method} ${path}`).toBe(404);
      expect(r.body.code).toBe('SVC_NOT_FOUND');
    }
  });

  it('rotates the secret: new value, new version, the old one no longer stored', async () => {
    const { app, secretKey } = (await api('POST', '/apps', sandboxApp())).body;
    const r = await api('POST', `/apps/${app.appId}/secret/rotate`);
    expect(r.status).toBe(200);
    expect(r.body.secretKey).toMatch(patterns.secretKey);
    expect(r.body.secretKey).not.toBe(secretKey);
    expect((await api('GET', `/apps/${app.appId}`)).body.secretVersion).toBe(2);
    const item = await storedApp(app.appId);
    expect(item.gsi2pk).toBe(`SECRET#${sha256hex(r.body.secretKey)}`);
    expect(decrypt(parseKey(ENCRYPTION_KEY)!, item.secretKeyEnc, `app:${app.appId}`)).toBe(
      r.body.secretKey,
    );
  });

  it('replays a POST with the same Idempotency-Key instead of creating a second app', async () => {
    const headers = { 'idempotency-key': `create-${Date.now()}` };
    const a = await api('POST', '/apps', sandboxApp(), headers);
    const b = await api('POST', '/apps', sandboxApp(), headers);
    expect(a.status).toBe(201);
    expect(b.status).toBe(201);
    expect(b.body.app.appId).toBe(a.body.app.appId);
  });
});

describe('API keys', () => {
  it('creates, lists without the key, revokes idempotently', async () => {
    const { app } = (await api('POST', '/apps', sandboxApp())).body;
    const created = await api('POST', `/apps/${app.appId}/api-keys`, {
      name: 'backend',
      scopes: ['consents:read', 'consents:write'],
    });
    expect(created.status).toBe(201);
    const { id, key } = created.body;
    expect(key).toMatch(patterns.apiKey);
    expect(id).toMatch(/^ak_/);
    expect(created.body).toMatchObject({
      name: 'backend',
      scopes: ['consents:read', 'consents:write'],
    });

    const stored = await p.rt.dynamo.doc.send(
      new GetCommand({
        TableName: p.rt.tables.entities,
        Key: { pk: `APIKEY#${sha256hex(key)}`, sk: 'APIKEY' },
      }),
    );
    expect(stored.Item).toMatchObject({ id, appId: app.appId });
    expect(JSON.stringify(stored.Item)).not.toContain(key);

    const second = await api('POST', `/apps/${app.appId}/api-keys`, {
      name: 'auditor',
      scopes: ['ledger:read'],
    });
    const list = await api('GET', `/apps/${app.appId}/api-keys`);
    expect(list.status).toBe(200);
    expect(list.body.items).toEqual([
      {
        id,
        name: 'backend',
        scopes: ['consents:read', 'consents:write'],
        createdAt: created.body.createdAt,
        revokedAt: null,
      },
      {
        id: second.body.id,
        name: 'auditor',
        scopes: ['ledger:read'],
        createdAt: second.body.createdAt,
        revokedAt: null,
      },
    ]);
    expect(JSON.stringify(list.body)).not.toContain(key);

    const revoked = await api('DELETE', `/apps/${app.appId}/api-keys/${id}`);
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({ id, name: 'backend' });
    expect(revoked.body.revokedAt).toEqual(expect.any(String));
    const again = await api('DELETE', `/apps/${app.appId}/api-keys/${id}`);
    expect(again.status).toBe(200);
    expect(again.body.revokedAt).toBe(revoked.body.revokedAt);
    expect((await api('GET', `/apps/${app.appId}/api-keys`)).body.items[0].revokedAt).toBe(
      revoked.body.revokedAt,
    );

    // Another app cannot see or revoke this app's keys.
    const other = (await api('POST', '/apps', sandboxApp())).body.app;
    expect((await api('GET', `/apps/${other.appId}/api-keys`)).body.items).toEqual([]);
    expect((await api('DELETE', `/apps/${other.appId}/api-keys/${second.body.id}`)).status).toBe(
      404,
    );
    expect((await api('DELETE', `/apps/${app.appId}/api-keys/ak_unknown`)).status).toBe(404);
  });

  it('validates names and scopes', async () => {
    const { app } = (await api('POST', '/apps', sandboxApp())).body;
    const r = await api('POST', `/apps/${app.appId}/api-keys`, { name: ' ', scopes: [] });
    expect(r.status).toBe(422);
    expect(paths(r)).toEqual(['/name', '/scopes']);
    const bad = await api('POST', `/apps/${app.appId}/api-keys`, { name: 'k', scopes: ['admin'] });
    expect(paths(bad)).toEqual(['/scopes/0']);
  });
});

describe('notices', () => {
  it('creates version 1, lists, reads, and makes version 2 on PUT keeping version 1', async () => {
    const { app } = (await api('POST', '/apps', sandboxApp())).body;
    const base = `/apps/${app.appId}/notices`;
    const created = await api('POST', base, notice());
    expect(created.status).toBe(201);
    const n1 = created.body;
    expect(n1).toMatchObject({
      appId: app.appId,
      version: 1,
      triggerKey: 'newsletter_signup',
      validityDays: 365,
      reminderDaysBefore: 30,
    });
    expect(n1.noticeId).toMatch(/^ntc_/);
    expect(n1.textHash).toMatch(/^[0-9a-f]{64}$/);
    expect(created.headers.get('location')).toBe(`/api/v1/admin${base}/${n1.noticeId}`);
    expect((await api('GET', base)).body).toEqual({ items: [n1] });
    expect((await api('GET', `${base}/${n1.noticeId}`)).body).toEqual(n1);

    const changed = notice({
      triggerKey: 'newsletter_form',
      validityDays: 180,
      purposes: [{ name: 'marketing', required: false, dataItems: ['email'] }],
      translations: {
        en: {
          title: 'News',
          body: 'New text',
          purposes: { marketing: { label: 'M', description: 'd' } },
        },
        hi: {
          title: 'समाचार',
          body: 'पाठ',
          purposes: { marketing: { label: 'म', description: 'द' } },
        },
      },
    });
    const put = await api('PUT', `${base}/${n1.noticeId}`, changed);
    expect(put.status).toBe(200);
    const n2 = put.body;
    expect(n2).toMatchObject({
      noticeId: n1.noticeId,
      version: 2,
      triggerKey: 'newsletter_form',
      validityDays: 180,
    });
    expect(n2.textHash).not.toBe(n1.textHash);

    expect((await api('GET', `${base}/${n1.noticeId}`)).body).toEqual(n2);
    expect((await api('GET', `${base}/${n1.noticeId}?version=1`)).body).toEqual(n1);
    expect((await api('GET', `${base}/${n1.noticeId}?version=2`)).body).toEqual(n2);
    expect((await api('GET', `${base}/${n1.noticeId}?version=3`)).status).toBe(404);
    const badQuery = await api('GET', `${base}/${n1.noticeId}?version=zero`);
    expect(badQuery.status).toBe(422);
    expect(paths(badQuery)).toEqual(['/version']);
    expect((await api('GET', base)).body).toEqual({ items: [n2] });

    // The same body again changes nothing (PUT is idempotent).
    const same = await api('PUT', `${base}/${n1.noticeId}`, changed);
    expect(same.body).toEqual(n2);

    // The trigger key moved: the old one is free, the new one resolves to version 2.
    expect(await getNoticeByTriggerKey(p.rt, app.appId, 'newsletter_signup')).toBeUndefined();
    expect(await getNoticeByTriggerKey(p.rt, app.appId, 'newsletter_form')).toEqual(n2);
    expect(await getNotice(p.rt, app.appId, n1.noticeId, 1)).toEqual(n1);
    const reuse = await api('POST', base, notice({ triggerKey: 'newsletter_signup' }));
    expect(reuse.status).toBe(201);
    expect([...(await declaredPurposes(p.rt, app.appId))!].sort()).toEqual([
      'essential',
      'marketing',
    ]);
  });

  it('keeps trigger keys unique per app (409) but not across apps', async () => {
    const a = (await api('POST', '/apps', sandboxApp())).body.app;
    const b = (await api('POST', '/apps', sandboxApp())).body.app;
    expect(await declaredPurposes(p.rt, a.appId)).toBeUndefined();
    const first = await api('POST', `/apps/${a.appId}/notices`, notice({ triggerKey: 'checkout' }));
    expect(first.status).toBe(201);
    const dup = await api('POST', `/apps/${a.appId}/notices`, notice({ triggerKey: 'checkout' }));
    expect(dup.status).toBe(409);
    expect(dup.body.code).toBe('SVC_CONFLICT');
    expect(
      (await api('POST', `/apps/${b.appId}/notices`, notice({ triggerKey: 'checkout' }))).status,
    ).toBe(201);

    const other = await api('POST', `/apps/${a.appId}/notices`, notice({ triggerKey: 'signup' }));
    const move = await api(
      'PUT',
      `/apps/${a.appId}/notices/${other.body.noticeId}`,
      notice({ triggerKey: 'checkout' }),
    );
    expect(move.status).toBe(409);
    expect((await api('GET', `/apps/${a.appId}/notices/${other.body.noticeId}`)).body).toEqual(
      other.body,
    );
    expect((await api('GET', `/apps/${a.appId}/notices`)).body.items).toHaveLength(2);
    expect(
      (await api('PUT', `/apps/${a.appId}/notices/ntc_01ARZ3NDEKTSV4RRFFQ69G5FAV`, notice()))
        .status,
    ).toBe(404);
    expect(
      (await api('GET', `/apps/${a.appId}/notices/ntc_01ARZ3NDEKTSV4RRFFQ69G5FAV`)).status,
    ).toBe(404);
  });

  it('answers 422 with paths for bad notices', async () => {
    const { app } = (await api('POST', '/apps', sandboxApp())).body;
    const shape = await api('POST', `/apps/${app.appId}/notices`, {
      ...notice(),
      kind: 'poster',
      triggerKey: 'Newsletter Signup',
      purposes: [{ name: '9bad', required: 'yes' }],
      validityDays: 4000,
    });
    expect(shape.status).toBe(422);
    expect(paths(shape)).toEqual([
      '/kind',
      '/purposes/0/name',
      '/purposes/0/required',
      '/triggerKey',
      '/validityDays',
    ]);
    const rules = await api('POST', `/apps/${app.appId}/notices`, {
      ...notice(),
      defaultLanguage: 'ta',
      reminderDaysBefore: 400,
      translations: {
        en: { title: 'x', body: 'y', purposes: { marketing: { label: 'l', description: 'd' } } },
        fr: { title: 'x', body: 'y', purposes: {} },
      },
    });
    expect(rules.status).toBe(422);
    expect(paths(rules)).toEqual(
      [
        '/reminderDaysBefore',
        '/translations/en/purposes/essential',
        '/translations/fr',
        '/translations/fr/purposes/essential',
        '/translations/fr/purposes/marketing',
        '/translations/ta',
      ].sort(),
    );
    expect((await api('GET', `/apps/${app.appId}/notices`)).body.items).toEqual([]);
  });
});

describe('API document', () => {
  it('lists every admin route with its schemas', async () => {
    const doc = (await (await fetch(`${p.url}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { requestBody?: unknown; security?: unknown }>>;
    };
    const ops = Object.entries(doc.paths)
      .filter(([path]) => path.startsWith('/api/v1/admin'))
      .flatMap(([path, o]) => Object.keys(o).map((m) => `${m.toUpperCase()} ${path}`))
      .sort();
    expect(ops).toEqual(
      [
        'POST /api/v1/admin/apps',
        'GET /api/v1/admin/apps/{appId}',
        'PATCH /api/v1/admin/apps/{appId}',
        'POST /api/v1/admin/apps/{appId}/secret/rotate',
        'POST /api/v1/admin/apps/{appId}/api-keys',
        'GET /api/v1/admin/apps/{appId}/api-keys',
        'DELETE /api/v1/admin/apps/{appId}/api-keys/{id}',
        'POST /api/v1/admin/apps/{appId}/notices',
        'GET /api/v1/admin/apps/{appId}/notices',
        'GET /api/v1/admin/apps/{appId}/notices/{noticeId}',
        'PUT /api/v1/admin/apps/{appId}/notices/{noticeId}',
        'GET /api/v1/admin/apps/{appId}/checklist',
        'POST /api/v1/admin/apps/{appId}/checklist/{itemId}/attest',
        'POST /api/v1/admin/apps/{appId}/go-live',
        'POST /api/v1/admin/apps/{appId}/sandbox/test-events',
        'GET /api/v1/admin/apps/{appId}/sandbox/inbox',
        'POST /api/v1/admin/apps/{appId}/sandbox/postbacks',
        'POST /api/v1/admin/apps/{appId}/breaches',
        'GET /api/v1/admin/apps/{appId}/breaches',
        'GET /api/v1/admin/apps/{appId}/breaches/{breachId}',
        'POST /api/v1/admin/apps/{appId}/breaches/{breachId}/principals',
        'POST /api/v1/admin/apps/{appId}/breaches/{breachId}/board-report',
        'GET /api/v1/admin/apps/{appId}/grievance-settings',
        'PUT /api/v1/admin/apps/{appId}/grievance-settings',
      ].sort(),
    );
    expect(doc.paths['/api/v1/admin/apps']!.post!.requestBody).toBeDefined();
    expect(doc.paths['/api/v1/admin/apps']!.post!.security).toEqual([{ admin: [] }]);
  });
});
