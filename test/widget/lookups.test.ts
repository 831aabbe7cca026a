import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminService } from '../../services/admin/index.js';
import { widgetService } from '../../services/widget/index.js';
import type { RunningProcess } from '../../bin/process.js';
import { client } from '../admin/client.js';
import { noticeBody } from '../consent/fixture.js';
import { testProcess } from '../helpers/stack.js';

/**
 * Translations are looked up by own property only: a language or purpose named like a member
 * of Object.prototype (`valueOf`, `constructor`, `__proto__`) is just an unknown name.
 */

const ORIGIN = 'https://shop.example';
const token = `lookups-admin-${randomBytes(12).toString('hex')}`;
let p: RunningProcess;
let http: ReturnType<typeof client>;
let appId: string;
let siteKey: string;

const admin = (method: string, path: string, body?: unknown) =>
  http(method, `/api/v1/admin${path}`, body, { authorization: `Bearer ${token}` });

beforeAll(async () => {
  p = await testProcess('widget-lookups', [adminService, widgetService], [], {
    SVC_ADMIN_TOKEN: token,
  });
  http = client(p.url);
  const created = await admin('POST', '/apps', {
    name: 'Shop',
    environment: 'sandbox',
    webhookUrl: 'http://127.0.0.1:9/hook',
    allowedOrigins: [ORIGIN],
    contactEmail: 'dpo@shop.example',
  });
  expect(created.status).toBe(201);
  appId = created.body.app.appId;
  siteKey = created.body.siteKey;
  const n = await admin(
    'POST',
    `/apps/${appId}/notices`,
    noticeBody('newsletter_signup', [{ name: 'essential', required: true }, { name: 'marketing' }]),
  );
  expect(n.status, JSON.stringify(n.body)).toBe(201);
});
afterAll(async () => {
  await p?.close();
});

describe('widget config with prototype names', () => {
  // `lang` is at most 8 characters: these are the Object.prototype members that fit.
  it.each(['valueOf', 'toString'])('?lang=%s falls back to English', async (lang) => {
    const r = await http('GET', `/api/v1/widget/config/newsletter_signup?lang=${lang}`, undefined, {
      'x-site-key': siteKey,
      origin: ORIGIN,
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ language: 'en', title: 'Your data' });
    expect(r.body.ui.acceptAll).toBe('Accept all');
    expect(r.body.purposes.map((x: { label: string }) => x.label)).toEqual([
      'essential',
      'marketing',
    ]);
  });

  it('a purpose cannot be named "constructor" (422, never a 500)', async () => {
    const r = await admin(
      'POST',
      `/apps/${appId}/notices`,
      noticeBody('cookie_banner', [{ name: 'essential' }, { name: 'constructor' }]),
    );
    expect(r.status, JSON.stringify(r.body)).toBe(422);
    expect(r.body.errors.map((e: { path: string }) => e.path)).toContain('/purposes/1/name');
  });
});
