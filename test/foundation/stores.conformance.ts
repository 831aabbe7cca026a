import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { ApiKeyStore } from '../../shared/domain/apiKeys.js';
import type { AppStore, StoredApp } from '../../shared/domain/apps.js';
import { newApiKeyId, newAppId, newNoticeId, newSiteKey } from '../../shared/domain/ids.js';
import type { NoticeStore } from '../../shared/domain/notices.js';
import type { ChecklistStore } from '../../shared/domain/observations.js';
import type { ApiKey, NoticeVersion } from '../../shared/domain/types.js';

/**
 * What every implementation of the domain's store ports must do, observed only through the
 * ports themselves. `stores` is read at each test (the runner sets it up in `beforeAll`).
 */
export interface Stores {
  apps: AppStore;
  apiKeys: ApiKeyStore;
  notices: NoticeStore;
  checklist: ChecklistStore;
}

const now = () => new Date().toISOString();

function anApp(over: Partial<StoredApp> = {}): StoredApp {
  const at = now();
  return {
    appId: newAppId(),
    name: 'Conformance',
    environment: 'sandbox',
    webhookUrl: 'https://hooks.example/a',
    allowedOrigins: ['https://shop.example'],
    contactEmail: 'dpo@shop.example',
    slaTimeScale: 1,
    siteKey: newSiteKey(),
    secretVersion: 1,
    widgetVerifiedAt: null,
    goLiveAt: null,
    createdAt: at,
    updatedAt: at,
    secretKeyEnc: 'box-secret-1',
    referenceKeyEnc: 'box-ref-1',
    ...over,
  } as StoredApp;
}

function aNotice(appId: string, over: Partial<NoticeVersion> = {}): NoticeVersion {
  return {
    appId,
    noticeId: newNoticeId(),
    version: 1,
    kind: 'consent',
    triggerKey: 'signup',
    defaultLanguage: 'en',
    purposes: [{ name: 'marketing', required: false }],
    translations: {
      en: { title: 'T', body: 'B', purposes: { marketing: { label: 'L', description: 'D' } } },
    },
    validityDays: 365,
    reminderDaysBefore: 30,
    textHash: 'h'.repeat(64),
    createdAt: now(),
    ...over,
  } as NoticeVersion;
}

export function storeConformance(stores: () => Stores): void {
  describe('AppStore', () => {
    it('creates once, loads what it stored, finds it by site key and secret hash', async () => {
      const { apps } = stores();
      const app = anApp();
      const hash = randomUUID();
      await apps.create(app, hash);
      await expect(apps.create(app, hash)).rejects.toThrow();
      expect(await apps.load(app.appId)).toEqual(app);
      expect(await apps.load(newAppId())).toBeUndefined();
      await expect.poll(() => apps.idBySiteKey(app.siteKey), { timeout: 10_000 }).toBe(app.appId);
      await expect.poll(() => apps.idBySecretHash(hash), { timeout: 10_000 }).toBe(app.appId);
      expect(await apps.idBySecretHash(randomUUID())).toBeUndefined();
    });

    it('updates only under the environment read, setting and removing attributes', async () => {
      const { apps } = stores();
      const app = anApp({ portalUrlTemplate: 'https://p.example/{referenceId}' });
      await apps.create(app, randomUUID());
      const at = now();
      const after = await apps.update(
        app.appId,
        { name: 'Renamed', portalUrlTemplate: null, contactEmail: undefined },
        at,
        'sandbox',
      );
      expect(after?.name).toBe('Renamed');
      expect(after?.updatedAt).toBe(at);
      expect(after).not.toHaveProperty('portalUrlTemplate');
      expect(after?.contactEmail).toBe(app.contactEmail);
      expect(await apps.update(app.appId, { name: 'No' }, now(), 'live')).toBeUndefined();
      expect(await apps.update(newAppId(), { name: 'No' }, now(), 'sandbox')).toBeUndefined();
      expect((await apps.load(app.appId))?.name).toBe('Renamed');
    });

    it('rotates the secret: new box, new index entry, version bumped', async () => {
      const { apps } = stores();
      const app = anApp();
      const oldHash = randomUUID();
      await apps.create(app, oldHash);
      const newHash = randomUUID();
      const after = await apps.rotateSecret(app.appId, 'box-secret-2', newHash, now());
      expect(after?.secretKeyEnc).toBe('box-secret-2');
      expect(after?.secretVersion).toBe(2);
      await expect.poll(() => apps.idBySecretHash(newHash), { timeout: 10_000 }).toBe(app.appId);
      await expect.poll(() => apps.idBySecretHash(oldHash), { timeout: 10_000 }).toBeUndefined();
      expect(await apps.rotateSecret(newAppId(), 'x', randomUUID(), now())).toBeUndefined();
    });

    it('records a go-live with its twin, and a widget sighting at most once a window', async () => {
      const { apps } = stores();
      const app = anApp();
      await apps.create(app, randomUUID());
      const twin = newAppId();
      const at = now();
      const live = await apps.recordGoLive(app.appId, { at, by: 'ops', twin: { liveAppId: twin } });
      expect(live).toMatchObject({ goLiveAt: at, goLiveBy: 'ops', liveAppId: twin });
      expect(
        await apps.recordGoLive(newAppId(), { at, by: 'ops', twin: { sandboxAppId: twin } }),
      ).toBeUndefined();

      const t0 = new Date('2030-01-01T00:00:00.000Z');
      const t1 = new Date(t0.getTime() + 30_000);
      const t2 = new Date(t0.getTime() + 61_000);
      const before = (t: Date) => new Date(t.getTime() - 60_000).toISOString();
      const o = 'https://shop.example';
      expect(await apps.markWidgetVerified(app.appId, o, t0.toISOString(), before(t0))).toBe(true);
      expect(await apps.markWidgetVerified(app.appId, o, t1.toISOString(), before(t1))).toBe(false);
      expect(await apps.markWidgetVerified(app.appId, o, t2.toISOString(), before(t2))).toBe(true);
      expect(await apps.load(app.appId)).toMatchObject({
        widgetVerifiedAt: t2.toISOString(),
        widgetVerifiedOrigin: o,
      });
      expect(await apps.markWidgetVerified(newAppId(), o, t0.toISOString(), before(t0))).toBe(
        false,
      );
    });

    it('lists sealed boxes and replaces one only while it is unchanged', async () => {
      const { apps } = stores();
      const app = anApp({ secretKeyEnc: `box-${randomUUID()}` });
      await apps.create(app, randomUUID());
      const seen: { appId: string; secretKeyEnc?: string }[] = [];
      for await (const page of apps.sealedBoxes()) seen.push(...page);
      expect(seen.find((b) => b.appId === app.appId)).toMatchObject({
        secretKeyEnc: app.secretKeyEnc,
        referenceKeyEnc: app.referenceKeyEnc,
      });
      const old = app.secretKeyEnc as string;
      expect(await apps.replaceBox(app.appId, 'secretKeyEnc', old, 'resealed')).toBe(true);
      expect(await apps.replaceBox(app.appId, 'secretKeyEnc', old, 'again')).toBe(false);
      expect((await apps.load(app.appId))?.secretKeyEnc).toBe('resealed');
    });
  });

  describe('ApiKeyStore', () => {
    const key = (appId: string, createdAt: string): ApiKey => ({
      id: newApiKeyId(),
      appId,
      name: 'k',
      scopes: ['consents:read'],
      createdAt,
      revokedAt: null,
    });

    it('keeps keys by hash, lists an app’s oldest first, revokes once', async () => {
      const { apiKeys } = stores();
      const appId = newAppId();
      const a = key(appId, '2030-01-01T00:00:00.000Z');
      const b = key(appId, '2030-01-02T00:00:00.000Z');
      const ha = randomUUID();
      await apiKeys.create(b, randomUUID());
      await apiKeys.create(a, ha);
      await expect(apiKeys.create(a, ha)).rejects.toThrow();
      expect(await apiKeys.byHash(ha)).toEqual(a);
      expect(await apiKeys.byHash(randomUUID())).toBeUndefined();
      await expect
        .poll(async () => (await apiKeys.list(appId)).map((k) => k.id), { timeout: 10_000 })
        .toEqual([a.id, b.id]);

      const at = now();
      expect(await apiKeys.revoke(appId, a.id, at)).toEqual({ ...a, revokedAt: at });
      expect(await apiKeys.revoke(appId, a.id, now())).toEqual({ ...a, revokedAt: at });
      expect(await apiKeys.revoke(appId, newApiKeyId(), now())).toBeUndefined();
      expect(await apiKeys.revoke(newAppId(), b.id, now())).toBeUndefined();
      expect((await apiKeys.byHash(ha))?.revokedAt).toBe(at);
    });
  });

  describe('NoticeStore', () => {
    it('creates a notice only for an existing app, with free trigger claims', async () => {
      const { apps, notices } = stores();
      const app = anApp();
      await apps.create(app, randomUUID());
      expect(await notices.create(aNotice(newAppId()))).toBe('unknown_app');
      const first = aNotice(app.appId);
      expect(await notices.create(first)).toBe('written');
      expect(await notices.get(app.appId, first.noticeId)).toEqual(first);
      expect(await notices.get(app.appId, first.noticeId, 1)).toEqual(first);
      expect(await notices.create(aNotice(app.appId))).toBe('claim_taken');
      const regional = aNotice(app.appId, { regions: ['IN-KA', 'IN-MH'] });
      expect(await notices.create(regional)).toBe('written');
      expect(await notices.create(aNotice(app.appId, { regions: ['IN-MH'] }))).toBe('claim_taken');
      expect(await notices.triggerHolders(app.appId, 'signup')).toEqual(
        expect.arrayContaining([
          { noticeId: first.noticeId },
          { noticeId: regional.noticeId, regions: ['IN-KA', 'IN-MH'] },
        ]),
      );
      expect((await notices.list(app.appId)).map((n) => n.noticeId).sort()).toEqual(
        [first.noticeId, regional.noticeId].sort(),
      );
    });

    it('replaces the head only while it is the one read, moving claims', async () => {
      const { apps, notices } = stores();
      const app = anApp();
      await apps.create(app, randomUUID());
      const head = aNotice(app.appId, { regions: ['IN-KA'] });
      expect(await notices.create(head)).toBe('written');
      const other = aNotice(app.appId, { regions: ['IN-TN'] });
      expect(await notices.create(other)).toBe('written');

      const next = { ...head, version: 2, regions: ['IN-GJ'], createdAt: now() };
      expect(await notices.replace(head, next)).toBe('written');
      expect(await notices.get(app.appId, head.noticeId)).toEqual(next);
      expect(await notices.get(app.appId, head.noticeId, 1)).toEqual(head);
      expect(await notices.triggerHolders(app.appId, 'signup')).toEqual(
        expect.arrayContaining([
          { noticeId: head.noticeId, regions: ['IN-GJ'] },
          { noticeId: other.noticeId, regions: ['IN-TN'] },
        ]),
      );
      // The stale head: version 1 is no longer the head.
      expect(await notices.replace(head, { ...next, version: 2 })).toBe('moved');
      // A region another notice holds.
      const clash = { ...next, version: 3, regions: ['IN-TN'], createdAt: now() };
      expect(await notices.replace(next, clash)).toBe('claim_taken');
      expect((await notices.get(app.appId, head.noticeId))?.version).toBe(2);
    });
  });

  describe('ChecklistStore', () => {
    it('keeps the last test event of each kind and every attestation in order', async () => {
      const { checklist } = stores();
      const appId = newAppId();
      const o = (status: number | null) => ({
        at: now(),
        url: 'https://hooks.example/a',
        type: 'consent.granted',
        status,
        errorClass: status === null ? 'timeout' : undefined,
        durationMs: 12,
      });
      await checklist.putTestEvent(appId, 'signed', o(500));
      const last = o(200);
      await checklist.putTestEvent(appId, 'signed', last);
      const bad = o(null);
      await checklist.putTestEvent(appId, 'bad_signature', bad);
      const t = Date.parse('2030-01-01T00:00:00.000Z');
      await checklist.putAttestation(appId, 'dpo', { by: 'a', note: '1', at: 'x1' }, t);
      await checklist.putAttestation(appId, 'dpo', { by: 'b', note: '2', at: 'x2' }, t + 1);
      const r = await checklist.records(appId);
      expect(r.testEvents).toEqual({ signed: last, bad_signature: bad });
      expect(r.attestations.map((a) => a.by)).toEqual(['a', 'b']);
      expect(r.attestations[0]).toEqual({ itemId: 'dpo', by: 'a', note: '1', at: 'x1' });
    });

    it('claims a go-live once, completes it, and refuses to release a completed claim', async () => {
      const { checklist } = stores();
      const appId = newAppId();
      const g = { by: 'ops', at: now() };
      expect(await checklist.claimGoLive(appId, g)).toBe(true);
      expect(await checklist.claimGoLive(appId, g)).toBe(false);
      await checklist.releaseGoLive(appId);
      expect(await checklist.claimGoLive(appId, g)).toBe(true);
      await checklist.completeGoLive(appId, { ...g, liveAppId: newAppId() });
      await expect(checklist.releaseGoLive(appId)).rejects.toThrow();
      expect(await checklist.claimGoLive(appId, g)).toBe(false);
    });

    it('keeps an inbox ring with increasing sequence numbers', async () => {
      const { checklist } = stores();
      const appId = newAppId();
      const d = (body: string) => ({
        receivedAt: now(),
        headers: { 'content-type': 'application/json' },
        body,
        signatureValid: body === 'one',
      });
      const first = await checklist.putInboxDelivery(appId, d('one'));
      const second = await checklist.putInboxDelivery(appId, d('two'));
      expect(second.seq).toBe(first.seq + 1);
      const inbox = (await checklist.inbox(appId)).sort((a, b) => a.seq - b.seq);
      expect(inbox).toEqual([first, second]);
    });
  });
}
