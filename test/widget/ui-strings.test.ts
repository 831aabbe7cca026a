import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminService } from '../../services/admin/index.js';
import { STRINGS_CACHE_CONTROL } from '../../services/widget/strings-route.js';
import { widgetService } from '../../services/widget/index.js';
import { CATALOGUES, en } from '../../shared/i18n/index.js';
import type { RunningProcess } from '../../bin/process.js';
import { client } from '../admin/client.js';
import { noticeBody } from '../consent/fixture.js';
import { testProcess } from '../helpers/stack.js';

/**
 * The widget's UI strings over HTTP: in the config (the notice's language) and from
 * GET /api/v1/widget/strings/{lang}, which any page may read without credentials.
 */

const ORIGIN = 'https://shop.example';
const token = `ui-strings-admin-${randomBytes(12).toString('hex')}`;
let p: RunningProcess;
let http: ReturnType<typeof client>;
let siteKey: string;

beforeAll(async () => {
  p = await testProcess('widget-ui-strings', [adminService, widgetService], [], {
    SVC_ADMIN_TOKEN: token,
  });
  http = client(p.url);
  const admin = (method: string, path: string, body?: unknown) =>
    http(method, `/api/v1/admin${path}`, body, { authorization: `Bearer ${token}` });
  const created = await admin('POST', '/apps', {
    name: 'Shop',
    environment: 'sandbox',
    webhookUrl: 'http://127.0.0.1:9/hook',
    allowedOrigins: [ORIGIN],
    contactEmail: 'dpo@shop.example',
  });
  expect(created.status).toBe(201);
  siteKey = created.body.siteKey;
  const body = noticeBody('newsletter_signup', [{ name: 'essential', required: true }]);
  const ur = {
    title: 'آپ کا ڈیٹا',
    body: 'ہم اسے استعمال کرتے ہیں:',
    purposes: body.translations.en.purposes,
  };
  const n = await admin('POST', `/apps/${created.body.app.appId}/notices`, {
    ...body,
    translations: { ...body.translations, ur },
  });
  expect(n.status, JSON.stringify(n.body)).toBe(201);
});
afterAll(async () => {
  await p?.close();
});

const config = (lang: string) =>
  http('GET', `/api/v1/widget/config/newsletter_signup?lang=${lang}`, undefined, {
    'x-site-key': siteKey,
    origin: ORIGIN,
  });

describe('UI strings in the widget config', () => {
  it('are those of the language the notice is shown in, with the languages named', async () => {
    const ur = await config('ur');
    expect(ur.status).toBe(200);
    expect(ur.body.language).toBe('ur');
    expect(ur.body.ui).toEqual(CATALOGUES.ur.widget);
    expect(ur.body.languageNames).toEqual({ en: 'English', hi: 'हिन्दी', ur: 'اردو' });
    // No Tamil text in the notice: the notice and its UI are English together.
    const ta = await config('ta');
    expect(ta.body.language).toBe('en');
    expect(ta.body.ui).toEqual(en.widget);
  });
});

describe('GET /api/v1/widget/strings/{lang}', () => {
  it('serves the widget and dashboard strings of a language to any origin, cached', async () => {
    const r = await fetch(`${p.url}/api/v1/widget/strings/sd`, {
      headers: { origin: 'https://anywhere.example' },
    });
    expect(r.status).toBe(200);
    expect(r.headers.get('access-control-allow-origin')).toBe('*');
    expect(r.headers.get('cache-control')).toBe(STRINGS_CACHE_CONTROL);
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await r.json()).toEqual({
      language: 'sd',
      dir: 'rtl',
      widget: CATALOGUES.sd.widget,
      dashboard: CATALOGUES.sd.dashboard,
    });
    const etag = r.headers.get('etag');
    expect(etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
    const again = await fetch(`${p.url}/api/v1/widget/strings/sd`, {
      headers: { 'if-none-match': etag! },
    });
    expect(again.status).toBe(304);
    const ta = await fetch(`${p.url}/api/v1/widget/strings/ta`);
    expect(ta.headers.get('etag')).not.toBe(etag);
    expect((await ta.json()).dir).toBe('ltr');
  });

  it.each(['xx', 'constructor', '__proto__', 'EN'])('answers 404 for %s', async (lang) => {
    const r = await fetch(`${p.url}/api/v1/widget/strings/${lang}`);
    expect(r.status).toBe(404);
    expect(r.headers.get('access-control-allow-origin')).toBe('*');
    expect((await r.json()).code).toBe('SVC_NOT_FOUND');
  });
});
