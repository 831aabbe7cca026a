import { randomBytes } from 'node:crypto';
import type { BaseConfig } from '../config.js';
import { AppError, type FieldError } from '../errors.js';
import { cached, invalidateCache } from './cache.js';
import { needsReseal, openSecret, safeEqual, sealSecret, sha256hex } from './crypto.js';
import { newAppId, newSecretKey, newSiteKey, patterns } from './ids.js';
import type { App, Environment, WebhookOrdering } from './types.js';
import { DEFAULT_RETENTION_DAYS } from './ledger/retention.js';

/**
 * Apps and their credentials. `secretKeyEnc` (AES-256-GCM, bound to the app id) is the only
 * copy of the secret and never leaves this module except through `getAppSecretKey`; the store
 * (`AppStore`) keeps the sealed boxes as it is given them.
 */
export interface CreateAppInput {
  name: string;
  environment: Environment;
  webhookUrl: string;
  allowedOrigins: string[];
  contactEmail: string;
  portalUrlTemplate?: string | undefined;
  slaTimeScale?: number | undefined;
  ledgerRetentionDays?: number | undefined;
  inactivityErasureDays?: number | undefined;
  webhookOrdering?: WebhookOrdering | undefined;
}

/** Settings an operator may change; `null` clears the portal template. */
export interface AppPatch {
  name?: string | undefined;
  webhookUrl?: string | undefined;
  allowedOrigins?: string[] | undefined;
  contactEmail?: string | undefined;
  portalUrlTemplate?: string | null | undefined;
  slaTimeScale?: number | undefined;
  ledgerRetentionDays?: number | undefined;
  /** `null` removes the inactivity policy. */
  inactivityErasureDays?: number | null | undefined;
  webhookOrdering?: WebhookOrdering | undefined;
}

/** An app as stored: the API shape, its sealed boxes (`…Enc`) and what else it records. */
export type StoredApp = App & Record<string, unknown>;

/** An app as a list of all apps shows it. */
export interface AppSummary {
  appId: string;
  name: string;
  environment: string;
  createdAt: string;
  widgetVerifiedAt: string | null;
}

/** The sealed attributes of one stored app, as a re-key reads them. */
export interface SealedBoxes {
  appId: string;
  secretKeyEnc?: string;
  referenceKeyEnc?: string;
}

/**
 * Where apps are kept (shared/storage/apps/store.ts). Every write names only the attributes it
 * changes, so none undoes a concurrent one; a write whose condition fails returns undefined
 * (false).
 */
export interface AppStore {
  /** Puts a new app, findable by its site key and by `secretHash`; refuses an existing id. */
  create(app: StoredApp, secretHash: string): Promise<void>;
  /** A consistent read. */
  load(appId: string): Promise<StoredApp | undefined>;
  /** The app an index names; the index lags a little, so read the app itself and check. */
  idBySiteKey(siteKey: string): Promise<string | undefined>;
  idBySecretHash(secretHash: string): Promise<string | undefined>;
  /** Sets the patch's values, removes its nulls, stamps `updatedAt`: if the app has `environment`. */
  update(
    appId: string,
    patch: Record<string, unknown>,
    updatedAt: string,
    environment: Environment,
  ): Promise<StoredApp | undefined>;
  /** A new sealed secret and its index entry, the version bumped, in one write. */
  rotateSecret(
    appId: string,
    secretKeyEnc: string,
    secretHash: string,
    at: string,
  ): Promise<StoredApp | undefined>;
  recordGoLive(
    appId: string,
    g: { at: string; by: string; twin: { liveAppId: string } | { sandboxAppId: string } },
  ): Promise<StoredApp | undefined>;
  /** Stamps the widget's sighting unless one at or after `before` is stored; false if so. */
  markWidgetVerified(appId: string, origin: string, at: string, before: string): Promise<boolean>;
  /**
   * One page of every app (after `cursor`, an opaque string from a previous page), at least
   * `want` unless the store ends or bounds the read; `next` resumes it, null at the end.
   */
  page(
    cursor: string | undefined,
    want: number,
  ): Promise<{ apps: AppSummary[]; next: string | null }>;
  /** Every app's sealed boxes, a page at a time. */
  sealedBoxes(): AsyncIterable<SealedBoxes[]>;
  /** Replaces a box if it is still `old`; false when it changed meanwhile. */
  replaceBox(
    appId: string,
    attr: 'secretKeyEnc' | 'referenceKeyEnc',
    old: string,
    next: string,
  ): Promise<boolean>;
}

/** What the app functions use; a Runtime is one. */
export interface AppsDeps {
  apps: AppStore;
  config: BaseConfig;
}
type AppItem = StoredApp;
const secretAad = (appId: string) => `app:${appId}`;
const referenceAad = (appId: string) => `app-ref:${appId}`;
/** The sealed attributes of an app item, with the additional data each is bound to. */
const SEALED = [
  { attr: 'secretKeyEnc', aad: secretAad },
  { attr: 'referenceKeyEnc', aad: referenceAad },
] as const;
const newReferenceKeyBox = (rt: AppsDeps, appId: string) =>
  sealSecret(rt.config, randomBytes(32).toString('base64'), referenceAad(appId));
const STORAGE_ATTRS = new Set(['pk', 'sk', 'gsi1pk', 'gsi1sk', 'gsi2pk', 'gsi2sk']);

/** The API shape: storage keys (if any) and every encrypted attribute (`…Enc`) removed. */
export function toApp(item: Record<string, unknown>): App {
  return Object.fromEntries(
    Object.entries(item).filter(([k]) => !STORAGE_ATTRS.has(k) && !k.endsWith('Enc')),
  ) as unknown as App;
}

/** Rules that span fields (the body schemas check each field alone). */
export function appRuleErrors(s: {
  environment: Environment;
  webhookUrl: string;
  slaTimeScale?: number | undefined;
}): FieldError[] {
  const errors: FieldError[] = [];
  if (s.environment === 'live' && !s.webhookUrl.startsWith('https://'))
    errors.push({ path: '/webhookUrl', message: 'must be an https URL for a live app' });
  if (s.environment === 'live' && s.slaTimeScale !== undefined && s.slaTimeScale !== 1)
    errors.push({ path: '/slaTimeScale', message: 'is for sandbox apps only' });
  return errors;
}

function assertRules(errors: FieldError[]): void {
  if (errors.length)
    throw new AppError('SVC_VALIDATION_FAILED', 'The body is not valid', { errors });
}

export async function createApp(
  rt: AppsDeps,
  input: CreateAppInput,
): Promise<{ app: App; secretKey: string }> {
  assertRules(appRuleErrors(input));
  const now = new Date().toISOString();
  const appId = newAppId();
  const siteKey = newSiteKey();
  const secretKey = newSecretKey(input.environment === 'sandbox');
  const app: App = {
    appId,
    name: input.name,
    environment: input.environment,
    webhookUrl: input.webhookUrl,
    allowedOrigins: input.allowedOrigins,
    contactEmail: input.contactEmail,
    ...(input.portalUrlTemplate !== undefined
      ? { portalUrlTemplate: input.portalUrlTemplate }
      : {}),
    slaTimeScale: input.environment === 'sandbox' ? (input.slaTimeScale ?? 1) : 1,
    ledgerRetentionDays: input.ledgerRetentionDays ?? DEFAULT_RETENTION_DAYS,
    ...(input.inactivityErasureDays !== undefined
      ? { inactivityErasureDays: input.inactivityErasureDays }
      : {}),
    webhookOrdering: input.webhookOrdering ?? 'independent',
    siteKey,
    secretVersion: 1,
    widgetVerifiedAt: null,
    goLiveAt: null,
    createdAt: now,
    updatedAt: now,
  };
  await rt.apps.create(
    {
      ...app,
      secretKeyEnc: sealSecret(rt.config, secretKey, secretAad(appId)),
      referenceKeyEnc: newReferenceKeyBox(rt, appId),
    },
    sha256hex(secretKey),
  );
  invalidateCache();
  return { app, secretKey };
}

async function getAppItem(rt: AppsDeps, appId: string): Promise<AppItem | undefined> {
  if (!patterns.appId.test(appId)) return undefined;
  return rt.apps.load(appId);
}

/** A consistent read: what the admin API shows. */
export async function getApp(rt: AppsDeps, appId: string): Promise<App | undefined> {
  const item = await getAppItem(rt, appId);
  return item && toApp(item);
}

/** The same through the in-process cache: for authentication on every request. */
export function getAppCached(
  rt: AppsDeps,
  appId: string,
  o: { refreshAhead?: boolean } = {},
): Promise<App | undefined> {
  return cached(rt, `app:${appId}`, () => getApp(rt, appId), o);
}

/**
 * The app's reference key: 32 random bytes, sealed in the app item (`referenceKeyEnc`) when the
 * app is created, under which a user id gives its first referenceId (ids.ts,
 * `derivedReferenceId`). It never changes (a key rotation reseals the box, `resealSecrets`), so
 * it is cached for the process's life.
 */
export function getReferenceKey(rt: AppsDeps, appId: string): Promise<Buffer> {
  let byApp = referenceKeys.get(rt);
  if (!byApp) referenceKeys.set(rt, (byApp = new Map<string, Promise<Buffer>>()));
  const known = byApp.get(appId);
  if (known) return known;
  const key = loadReferenceKey(rt, appId);
  byApp.set(appId, key);
  key.catch(() => byApp.delete(appId));
  return key;
}

const referenceKeys = new WeakMap<AppsDeps, Map<string, Promise<Buffer>>>();

async function loadReferenceKey(rt: AppsDeps, appId: string): Promise<Buffer> {
  const item = await getAppItem(rt, appId);
  if (!item || typeof item.referenceKeyEnc !== 'string')
    throw new AppError('SVC_NOT_FOUND', 'Unknown app');
  return Buffer.from(openSecret(rt.config, item.referenceKeyEnc, referenceAad(appId)), 'base64');
}

/** Resolves an index entry to the app id, then reads the item itself (indexes lag a little). */
async function appItemByIndex(
  rt: AppsDeps,
  appId: Promise<string | undefined>,
): Promise<AppItem | undefined> {
  const id = await appId;
  return id === undefined ? undefined : getAppItem(rt, id);
}

export function getAppBySiteKey(rt: AppsDeps, siteKey: string): Promise<App | undefined> {
  if (!patterns.siteKey.test(siteKey)) return Promise.resolve(undefined);
  return cached(rt, `site:${siteKey}`, async () => {
    const item = await appItemByIndex(rt, rt.apps.idBySiteKey(siteKey));
    // The index may still point at an app whose site key changed; trust the item only.
    return item && item.siteKey === siteKey ? toApp(item) : undefined;
  });
}

/**
 * The app whose current secret key this is. The index finds the candidate; the decrypted
 * current secret decides (constant-time), so a key rotated away a moment ago never passes
 * even while the index still lists it.
 */
export function getAppBySecretKey(rt: AppsDeps, secretKey: string): Promise<App | undefined> {
  if (!patterns.secretKey.test(secretKey)) return Promise.resolve(undefined);
  const hash = sha256hex(secretKey);
  return cached(rt, `secret:${hash}`, async () => {
    const item = await appItemByIndex(rt, rt.apps.idBySecretHash(hash));
    if (!item || typeof item.secretKeyEnc !== 'string') return undefined;
    const current = openSecret(rt.config, item.secretKeyEnc, secretAad(item.appId));
    return safeEqual(current, secretKey) ? toApp(item) : undefined;
  });
}

/** The current secret in clear: the webhook signer's key. Never log the result. */
export async function getAppSecretKey(rt: AppsDeps, app: Pick<App, 'appId'>): Promise<string> {
  const item = await getAppItem(rt, app.appId);
  if (!item || typeof item.secretKeyEnc !== 'string')
    throw new AppError('SVC_NOT_FOUND', 'Unknown app');
  return openSecret(rt.config, item.secretKeyEnc, secretAad(app.appId));
}

/**
 * Applies a partial change. The write names only the changed attributes (so it never undoes a
 * concurrent rotation) and is conditional on the environment the rules were checked against.
 */
export async function updateApp(rt: AppsDeps, appId: string, patch: AppPatch): Promise<App> {
  const current = await getApp(rt, appId);
  if (!current) throw new AppError('SVC_NOT_FOUND', 'Unknown app');
  const webhookUrl = patch.webhookUrl ?? current.webhookUrl;
  assertRules(
    appRuleErrors({
      environment: current.environment,
      webhookUrl,
      slaTimeScale: patch.slaTimeScale,
    }),
  );
  try {
    const app = await rt.apps.update(
      appId,
      { ...patch },
      new Date().toISOString(),
      current.environment,
    );
    if (!app) throw new AppError('SVC_CONFLICT', 'The app changed meanwhile; retry');
    return toApp(app);
  } finally {
    invalidateCache();
  }
}

/**
 * A new secret key; the old one stops working at once (secret, index entry and version change
 * in one write; this process's cache is cleared, other processes' within the cache TTL).
 */
export async function rotateSecret(
  rt: AppsDeps,
  appId: string,
): Promise<{ secretKey: string; app: App }> {
  const current = await getApp(rt, appId);
  if (!current) throw new AppError('SVC_NOT_FOUND', 'Unknown app');
  const secretKey = newSecretKey(current.environment === 'sandbox');
  try {
    const app = await rt.apps.rotateSecret(
      appId,
      sealSecret(rt.config, secretKey, secretAad(appId)),
      sha256hex(secretKey),
      new Date().toISOString(),
    );
    if (!app) throw new AppError('SVC_NOT_FOUND', 'Unknown app');
    return { secretKey, app: toApp(app) };
  } finally {
    invalidateCache();
  }
}

/**
 * Records a go-live on an app (docs/api.md, Compliance checklist and go-live): when and by whom,
 * and the twin it is linked to (`liveAppId` on the sandbox app, `sandboxAppId` on the live
 * one). Names only these attributes, so it never undoes a concurrent change.
 */
export async function recordGoLive(
  rt: AppsDeps,
  appId: string,
  g: { at: string; by: string; twin: { liveAppId: string } | { sandboxAppId: string } },
): Promise<App> {
  try {
    const app = await rt.apps.recordGoLive(appId, g);
    if (!app) throw new AppError('SVC_NOT_FOUND', 'Unknown app');
    return toApp(app);
  } finally {
    invalidateCache();
  }
}

/** The widget calls this on every config request; the time is kept to the minute. */
export const VERIFY_RESOLUTION_MS = 60_000;
/** (app, origin) pairs remembered per process; origins are allowlisted, so few per app. */
const MAX_VERIFY_MEMO = 10_000;
const verifyMemo = new WeakMap<AppsDeps, Map<string, number>>();

/**
 * Records that the widget was seen on an allowlisted origin (the console shows the time and
 * the origin). Anyone can send an allowlisted Origin header, so this must not turn every
 * config call into a write: each process writes at most once a minute per (app, origin), and
 * the write itself is conditional on the stored time being a minute old (a refused
 * conditional write is billed too, hence the in-process memo first).
 */
export async function markWidgetVerified(
  rt: AppsDeps,
  appId: string,
  origin: string,
  at: Date,
): Promise<void> {
  let memo = verifyMemo.get(rt);
  if (!memo) verifyMemo.set(rt, (memo = new Map<string, number>()));
  const key = `${appId} ${origin}`;
  const last = memo.get(key);
  if (last !== undefined && at.getTime() - last < VERIFY_RESOLUTION_MS) return;
  memo.delete(key);
  memo.set(key, at.getTime());
  if (memo.size > MAX_VERIFY_MEMO) {
    const oldest = memo.keys().next().value;
    if (oldest !== undefined) memo.delete(oldest);
  }
  try {
    await rt.apps.markWidgetVerified(
      appId,
      origin,
      at.toISOString(),
      new Date(at.getTime() - VERIFY_RESOLUTION_MS).toISOString(),
    );
  } catch (err) {
    memo.delete(key); // not recorded: the next call tries again
    throw err;
  }
}

/**
 * Reseals every app's sealed secrets (its secret key and its reference key) under the current
 * encryption key (after a key was added to SVC_ENCRYPTION_KEYS), so the old key can then be
 * removed. Each write is conditional on the
 * box being the one read, so a rotation meanwhile is never undone. Idempotent; `left` counts
 * boxes that changed under it (run again).
 */
export async function resealSecrets(
  rt: AppsDeps,
): Promise<{ checked: number; resealed: number; left: number }> {
  let checked = 0;
  let resealed = 0;
  let left = 0;
  for await (const page of rt.apps.sealedBoxes()) {
    for (const item of page) {
      for (const { attr, aad: aadOf } of SEALED) {
        const box = item[attr];
        if (typeof box !== 'string') continue;
        checked++;
        if (!needsReseal(rt.config, box)) continue;
        const aad = aadOf(String(item.appId));
        const next = sealSecret(rt.config, openSecret(rt.config, box, aad), aad);
        if (await rt.apps.replaceBox(item.appId, attr, box, next)) resealed++;
        else left++;
      }
    }
  }
  return { checked, resealed, left };
}
