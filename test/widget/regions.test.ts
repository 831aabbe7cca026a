import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminService } from '../../services/admin/index.js';
import { widgetService } from '../../services/widget/index.js';
import { getStoredTransaction, getTransaction } from '../../shared/domain/consent/index.js';
import type { RunningProcess } from '../../bin/process.js';
import { client, type Reply } from '../admin/client.js';
import { noticeBody } from '../consent/fixture.js';
import { testProcess } from '../helpers/stack.js';

/**
 * Banners per state or region (docs/api.md, Regions): several notices under one trigger key,
 * each for its own regions and at most one without; the widget's config and capture pick the
 * notice for the page's region. Against the real DynamoDB Local stack.
 */

const ORIGIN = 'https://shop.example';
const token = `regions-admin-${randomBytes(12).toString('hex')}`;
let p: RunningProcess;
let http: ReturnType<typeof client>;

const admin = (method: string, path: string, body?: unknown) =>
  http(method, `/api/v1/admin${path}`, body, { authorization: `Bearer ${token}` });

/** A notice whose English title says which one it is. */
function regional(triggerKey: string, title: string, regions?: string[]) {
  const n = noticeBody(triggerKey, [{ name: 'essential', required: true }, { name: 'marketing' }]);
  n.translations.en.title = title;
  return regions ? { ...n, regions } : n;
}

async function newApp(): Promise<{ appId: string; siteKey: string }> {
  const created = await admin('POST', '/apps', {
    name: 'Shop',
    environment: 'sandbox',
    webhookUrl: 'http://127.0.0.1:9/hook',
    allowedOrigins: [ORIGIN],
    contactEmail: 'dpo@shop.example',
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return { appId: created.body.app.appId, siteKey: created.body.siteKey };
}

async function created(r: Promise<Reply>): Promise<Reply['body']> {
  const reply = await r;
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  return reply.body;
}

const paths = (r: Reply) => (r.body.errors as { path: string }[]).map((e) => e.path);

beforeAll(async () => {
  p = await testProcess('widget-regions', [adminService, widgetService], [], {
    SVC_ADMIN_TOKEN: token,
  });
  http = client(p.url);
});
afterAll(async () => {
  await p?.close();
});

describe('notices with regions (admin API)', () => {
  it('keeps one trigger key unique per app and region: 409 for an overlap, nothing written', async () => {
    const { appId } = await newApp();
    const base = `/apps/${appId}/notices`;
    const mh = await created(admin('POST', base, regional('signup', 'MH', ['IN-MH'])));
    expect(mh).toMatchObject({ triggerKey: 'signup', version: 1, regions: ['IN-MH'] });
    // Stored as current codes, sorted: IN-OR is Odisha's retired code.
    const east = await created(
      admin('POST', base, regional('signup', 'East', ['IN-WB', 'IN-OR', 'IN-AS'])),
    );
    expect(east.regions).toEqual(['IN-AS', 'IN-OD', 'IN-WB']);
    const everywhere = await created(admin('POST', base, regional('signup', 'Everywhere')));
    expect(everywhere).not.toHaveProperty('regions');

    // A region another notice of the key covers: 409, naming the region and the notice.
    const overlap = await admin('POST', base, regional('signup', 'West', ['IN-GJ', 'IN-MH']));
    expect(overlap.status, JSON.stringify(overlap.body)).toBe(409);
    expect(overlap.body.code).toBe('SVC_CONFLICT');
    expect(overlap.body.detail).toContain('IN-MH');
    expect(overlap.body.detail).not.toContain('IN-GJ');
    expect(overlap.body.errors).toEqual([
      { path: '/regions', message: `IN-MH is already covered by notice ${mh.noticeId}` },
    ]);
    // A second notice without regions: 409.
    const second = await admin('POST', base, regional('signup', 'Everywhere 2'));
    expect(second.status).toBe(409);
    expect(second.body.detail).toContain(everywhere.noticeId);
    expect(paths(second)).toEqual(['/triggerKey']);
    // Neither refused notice left anything: IN-GJ is still free and has the default.
    expect((await admin('GET', base)).body.items).toHaveLength(3);
    await created(admin('POST', base, regional('signup', 'Gujarat', ['IN-GJ'])));
    // Other trigger keys and other apps are not affected.
    await created(admin('POST', base, regional('checkout', 'MH checkout', ['IN-MH'])));
    const other = await newApp();
    await created(
      admin('POST', `/apps/${other.appId}/notices`, regional('signup', 'MH', ['IN-MH'])),
    );
  });

  it('refuses unknown, empty and repeated region codes (422 with paths)', async () => {
    const { appId } = await newApp();
    const base = `/apps/${appId}/notices`;
    const cases: [unknown, string[]][] = [
      [['IN-MH', 'IN-ZZ'], ['/regions/1']],
      [['in-mh'], ['/regions/0']],
      [['MH'], ['/regions/0']],
      [[], ['/regions']],
      [['IN-KA', 'IN-KA'], ['/regions/1']],
      [['IN-TS', 'IN-TG'], ['/regions/1']],
      ['IN-MH', ['/regions']],
    ];
    for (const [regions, want] of cases) {
      const r = await admin('POST', base, { ...regional('signup', 'x'), regions });
      expect(r.status, JSON.stringify(regions)).toBe(422);
      expect(paths(r), JSON.stringify(regions)).toEqual(want);
    }
    expect((await admin('GET', base)).body.items).toEqual([]);
  });

  it('every change of regions is a new version; a change into an overlap is 409 and keeps the notice', async () => {
    const { appId } = await newApp();
    const base = `/apps/${appId}/notices`;
    const mh = await created(admin('POST', base, regional('signup', 'MH', ['IN-MH'])));
    const ka = await created(admin('POST', base, regional('signup', 'KA', ['IN-KA'])));
    await created(admin('POST', base, regional('signup', 'Everywhere')));

    const grown = await admin(
      'PUT',
      `${base}/${mh.noticeId}`,
      regional('signup', 'MH', ['IN-GA', 'IN-MH']),
    );
    expect(grown.status, JSON.stringify(grown.body)).toBe(200);
    expect(grown.body).toMatchObject({ version: 2, regions: ['IN-GA', 'IN-MH'] });
    expect(grown.body.textHash).toBe(mh.textHash);
    // The same set in another order is the same content: no new version.
    const same = await admin(
      'PUT',
      `${base}/${mh.noticeId}`,
      regional('signup', 'MH', ['IN-MH', 'IN-GA']),
    );
    expect(same.body.version).toBe(2);
    expect((await admin('GET', `${base}/${mh.noticeId}?version=1`)).body.regions).toEqual([
      'IN-MH',
    ]);

    // Into KA's region, or into a second notice without regions: 409, nothing changed.
    const intoKa = await admin(
      'PUT',
      `${base}/${mh.noticeId}`,
      regional('signup', 'MH', ['IN-KA', 'IN-MH']),
    );
    expect(intoKa.status).toBe(409);
    expect(intoKa.body.errors).toEqual([
      { path: '/regions', message: `IN-KA is already covered by notice ${ka.noticeId}` },
    ]);
    const dropRegions = await admin('PUT', `${base}/${ka.noticeId}`, regional('signup', 'KA'));
    expect(dropRegions.status).toBe(409);
    expect((await admin('GET', `${base}/${mh.noticeId}`)).body.version).toBe(2);
    expect((await admin('GET', `${base}/${ka.noticeId}`)).body).toEqual(ka);

    // Giving up a region frees it at once, in the same write.
    const shrunk = await admin(
      'PUT',
      `${base}/${mh.noticeId}`,
      regional('signup', 'MH', ['IN-GA']),
    );
    expect(shrunk.body).toMatchObject({ version: 3, regions: ['IN-GA'] });
    await created(admin('POST', base, regional('signup', 'MH again', ['IN-MH'])));
    // Moving to another trigger key takes its regions along.
    const moved = await admin('PUT', `${base}/${ka.noticeId}`, regional('checkout', 'KA'));
    expect(moved.body).toMatchObject({ version: 2, triggerKey: 'checkout' });
    expect(moved.body).not.toHaveProperty('regions');
    await created(admin('POST', base, regional('signup', 'KA again', ['IN-KA'])));
  });

  it('two notices racing for one region: exactly one is created', async () => {
    const { appId } = await newApp();
    const base = `/apps/${appId}/notices`;
    const replies = await Promise.all(
      ['IN-MH', 'IN-KA'].flatMap((own) =>
        [0, 1, 2].map((i) =>
          admin('POST', base, regional('signup', `${own} ${i}`, [own, 'IN-DL'])),
        ),
      ),
    );
    expect(replies.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409, 409]);
    const items = (await admin('GET', base)).body.items;
    expect(items).toHaveLength(1);
  });
});

describe('widget config and capture per region', () => {
  let siteKey: string;
  let appId: string;
  const ids: Record<string, string> = {};
  const config = (query: string) =>
    http('GET', `/api/v1/widget/config/signup${query}`, undefined, {
      'x-site-key': siteKey,
      origin: ORIGIN,
    });
  const capture = (body: Record<string, unknown>) =>
    http(
      'POST',
      '/api/v1/widget/capture',
      {
        siteKey,
        processId: 'signup',
        mode: 'silent',
        language: 'en',
        pageUrl: 'https://shop.example/signup',
        ...body,
      },
      { 'x-site-key': siteKey, origin: ORIGIN },
    );

  beforeAll(async () => {
    ({ appId, siteKey } = await newApp());
    const base = `/apps/${appId}/notices`;
    ids.mh = (
      await created(admin('POST', base, regional('signup', 'Maharashtra', ['IN-MH'])))
    ).noticeId;
    ids.south = (
      await created(admin('POST', base, regional('signup', 'South', ['IN-KA', 'IN-KL'])))
    ).noticeId;
    ids.everywhere = (
      await created(admin('POST', base, regional('signup', 'Everywhere')))
    ).noticeId;
    ids.onlyMh = (
      await created(admin('POST', base, regional('only_mh', 'Only Maharashtra', ['IN-MH'])))
    ).noticeId;
  });

  it.each<[string, string, string, string | null, string[] | null]>([
    ['?region=IN-MH', 'mh', 'Maharashtra', 'IN-MH', ['IN-MH']],
    ['?region=IN-KL&lang=hi', 'south', 'आपका डेटा', 'IN-KL', ['IN-KA', 'IN-KL']],
    ['?region=IN-KA', 'south', 'South', 'IN-KA', ['IN-KA', 'IN-KL']],
    ['?region=IN-GJ', 'everywhere', 'Everywhere', 'IN-GJ', null],
    ['', 'everywhere', 'Everywhere', null, null],
    // A retired code reads as its successor (Odisha).
    ['?region=IN-OR', 'everywhere', 'Everywhere', 'IN-OD', null],
  ])('config%s → the %s notice', async (query, which, title, region, noticeRegions) => {
    const r = await config(query);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({
      processId: 'signup',
      noticeId: ids[which],
      noticeVersion: 1,
      title,
      region,
      noticeRegions,
    });
  });

  it('an unknown region is 422; a key with no notice for the region and none without is 404', async () => {
    for (const bad of ['IN-ZZ', 'in-mh', 'MH', 'IN-MH-1', ''])
      expect((await config(`?region=${bad}`)).status, bad).toBe(422);
    const only = (q: string) =>
      http('GET', `/api/v1/widget/config/only_mh${q}`, undefined, {
        'x-site-key': siteKey,
        origin: ORIGIN,
      });
    expect((await only('?region=IN-MH')).body.noticeId).toBe(ids.onlyMh);
    expect((await only('?region=IN-KA')).status).toBe(404);
    expect((await only('')).status).toBe(404);
  });

  it('a capture uses the notice for its region and stores the region in the proof', async () => {
    const ka = await capture({ region: 'IN-KA' });
    expect(ka.status, JSON.stringify(ka.body)).toBe(201);
    const stored = await getStoredTransaction(p.rt, appId, ka.body.consentId);
    expect(stored).toMatchObject({ processId: 'signup', noticeId: ids.south, noticeVersion: 1 });
    expect(stored?.proof).toMatchObject({ region: 'IN-KA', language: 'en', noticeVersion: 1 });
    expect((await getTransaction(p.rt, appId, ka.body.consentId))?.region).toBe('IN-KA');

    const gj = await capture({ region: 'IN-GJ' });
    const gjStored = await getStoredTransaction(p.rt, appId, gj.body.consentId);
    expect(gjStored).toMatchObject({ noticeId: ids.everywhere, proof: { region: 'IN-GJ' } });

    const none = await capture({});
    const noneStored = await getStoredTransaction(p.rt, appId, none.body.consentId);
    expect(noneStored?.noticeId).toBe(ids.everywhere);
    expect(noneStored?.proof).not.toHaveProperty('region');
    expect(await getTransaction(p.rt, appId, none.body.consentId)).not.toHaveProperty('region');

    expect((await capture({ region: 'IN-ZZ' })).status).toBe(422);
    // No notice for the region and none without regions: 404, nothing captured.
    expect((await capture({ processId: 'only_mh', region: 'IN-KA' })).status).toBe(404);
  });
});
