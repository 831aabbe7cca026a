import { describe, expect, it } from 'vitest';
import { createAppBody, isOrigin, noticeBody, patchAppBody } from './schemas.js';

describe('isOrigin', () => {
  it.each([
    ['https://shop.example', true],
    ['http://localhost:3000', true],
    ['https://shop.example:8443', true],
    ['https://shop.example/', false],
    ['https://shop.example/path', false],
    ['https://Shop.example', false],
    ['https://shop.example:443', false],
    ['ftp://shop.example', false],
    ['shop.example', false],
    ['https://user:pw@shop.example', false],
  ])('%s → %s', (s, want) => {
    expect(isOrigin(s)).toBe(want);
  });
});

const app = {
  name: 'Shop',
  environment: 'sandbox',
  webhookUrl: 'http://127.0.0.1:9000/hooks',
  allowedOrigins: ['https://shop.example', 'https://shop.example'],
  contactEmail: 'ops@shop.example',
};

describe('app bodies', () => {
  it('accepts a minimal app and removes duplicate origins', () => {
    expect(createAppBody.parse(app).allowedOrigins).toEqual(['https://shop.example']);
  });

  it('rejects unknown keys, bad e-mails and portal templates without {referenceId}', () => {
    const r = createAppBody.safeParse({
      ...app,
      contactEmail: 'nope',
      portalUrlTemplate: 'https://shop.example/portal',
      extra: 1,
    });
    expect(r.success).toBe(false);
    const paths = r.error!.issues.map((i) => i.path.join('/'));
    expect(paths).toEqual(expect.arrayContaining(['contactEmail', 'portalUrlTemplate', '']));
  });

  it('refuses an environment change in a patch and allows clearing the portal template', () => {
    const r = patchAppBody.safeParse({ environment: 'live' });
    expect(r.success).toBe(false);
    expect(r.error!.issues[0]!.path).toEqual(['environment']);
    expect(patchAppBody.parse({ portalUrlTemplate: null })).toEqual({ portalUrlTemplate: null });
  });
});

describe('notice body', () => {
  const notice = {
    kind: 'cookie',
    triggerKey: 'cookie_banner',
    defaultLanguage: 'en',
    purposes: [{ name: 'analytics' }],
    translations: {
      en: { title: 't', body: 'b', purposes: { analytics: { label: 'l', description: 'd' } } },
    },
  };

  it('fills the defaults', () => {
    const n = noticeBody.parse(notice);
    expect(n).toMatchObject({ validityDays: 365, reminderDaysBefore: 30 });
    expect(n.purposes[0]).toEqual({ name: 'analytics', required: false, dataItems: [] });
    expect(noticeBody.parse({ ...notice, validityDays: 7 }).reminderDaysBefore).toBe(6);
  });

  it('reports cross-field errors at their paths', () => {
    const r = noticeBody.safeParse({ ...notice, defaultLanguage: 'hi' });
    expect(r.success).toBe(false);
    expect(r.error!.issues.map((i) => i.path.join('/'))).toEqual(['translations/hi']);
  });
});
