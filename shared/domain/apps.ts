import {
  GetCommand,
  PutCommand,
  QueryCommand,
  ScanCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { randomBytes } from 'node:crypto';
import { AppError, type FieldError } from '../errors.js';
import type { Runtime } from '../runtime.js';
import { isConditionFailure, updateIfHolds } from '../storage/dynamo.js';
import { cached, invalidateCache } from './cache.js';
import { needsReseal, openSecret, safeEqual, sealSecret, sha256hex } from './crypto.js';
import { newAppId, newSecretKey, newSiteKey, patterns } from './ids.js';
import type { App, Environment } from './types.js';
import { DEFAULT_RETENTION_DAYS } from './ledger/retention.js';

/**
 * Apps in the `entities` table: pk `APP#{appId}`, sk `APP`; gsi1 finds an app by site key,
 * gsi2 by the SHA-256 of its secret key. `secretKeyEnc` (AES-256-GCM, bound to the app id)
 * is the only copy of the secret and never leaves this module except through
 * `getAppSecretKey`.
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
}

type AppItem = App & Record<string, unknown>;

const appPk = (appId: string) => `APP#${appId}`;
const secretAad = (appId: string) => `app:${appId}`;
const referenceAad = (appId: string) => `app-ref:${appId}`;
/** The sealed attributes of an app item, with the additional data each is bound to. */
const SEALED = [
  { attr: 'secretKeyEnc', aad: secretAad },
  { attr: 'referenceKeyEnc', aad: referenceAad },
] as const;
const newReferenceKeyBox = (rt: Runtime, appId: string) =>
  sealSecret(rt.config, randomBytes(32).toString('base64'), referenceAad(appId));
const STORAGE_ATTRS = new Set(['pk', 'sk', 'gsi1pk', 'gsi1sk', 'gsi2pk', 'gsi2sk']);

/** The API shape: storage keys and every encrypted attribute (`…Enc`) removed. */
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
  rt: Runtime,
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
    siteKey,
    secretVersion: 1,
    widgetVerifiedAt: null,
    goLiveAt: null,
    createdAt: now,
    updatedAt: now,
  };
  await rt.dynamo.doc.send(
    new PutCommand({
      TableName: rt.tables.entities,
      Item: {
        ...app,
        pk: appPk(appId),
        sk: 'APP',
        gsi1pk: `SITEKEY#${siteKey}`,
        gsi1sk: 'APP',
        gsi2pk: `SECRET#${sha256hex(secretKey)}`,
        gsi2sk: 'APP',
        secretKeyEnc: sealSecret(rt.config, secretKey, secretAad(appId)),
        referenceKeyEnc: newReferenceKeyBox(rt, appId),
      },
      ConditionExpression: 'attribute_not_exists(pk)',
    }),
  );
  invalidateCache();
  return { app, secretKey };
}

async function getAppItem(rt: Runtime, appId: string): Promise<AppItem | undefined> {
  if (!patterns.appId.test(appId)) return undefined;
  const r = await rt.dynamo.doc.send(
    new GetCommand({
      TableName: rt.tables.entities,
      Key: { pk: appPk(appId), sk: 'APP' },
      ConsistentRead: true,
    }),
  );
  return r.Item as AppItem | undefined;
}

/** A consistent read: what the admin API shows. */
export async function getApp(rt: Runtime, appId: string): Promise<App | undefined> {
  const item = await getAppItem(rt, appId);
  return item && toApp(item);
}

/** The same through the in-process cache: for authentication on every request. */
export function getAppCached(
  rt: Runtime,
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
export function getReferenceKey(rt: Runtime, appId: string): Promise<Buffer> {
  let byApp = referenceKeys.get(rt);
  if (!byApp) referenceKeys.set(rt, (byApp = new Map<string, Promise<Buffer>>()));
  const known = byApp.get(appId);
  if (known) return known;
  const key = loadReferenceKey(rt, appId);
  byApp.set(appId, key);
  key.catch(() => byApp.delete(appId));
  return key;
}

const referenceKeys = new WeakMap<Runtime, Map<string, Promise<Buffer>>>();

async function loadReferenceKey(rt: Runtime, appId: string): Promise<Buffer> {
  const item = await getAppItem(rt, appId);
  if (!item || typeof item.referenceKeyEnc !== 'string')
    throw new AppError('SVC_NOT_FOUND', 'Unknown app');
  return Buffer.from(openSecret(rt.config, item.referenceKeyEnc, referenceAad(appId)), 'base64');
}

/** Resolves an index entry to the app id, then reads the item itself (indexes lag a little). */
async function appItemByIndex(
  rt: Runtime,
  index: 'gsi1' | 'gsi2',
  pk: string,
): Promise<AppItem | undefined> {
  const r = await rt.dynamo.doc.send(
    new QueryCommand({
      TableName: rt.tables.entities,
      IndexName: index,
      KeyConditionExpression: '#pk = :pk AND #sk = :sk',
      ExpressionAttributeNames: { '#pk': `${index}pk`, '#sk': `${index}sk` },
      ExpressionAttributeValues: { ':pk': pk, ':sk': 'APP' },
      ProjectionExpression: 'appId',
    }),
  );
  const appId = r.Items?.[0]?.appId as string | undefined;
  return appId === undefined ? undefined : getAppItem(rt, appId);
}

export function getAppBySiteKey(rt: Runtime, siteKey: string): Promise<App | undefined> {
  if (!patterns.siteKey.test(siteKey)) return Promise.resolve(undefined);
  return cached(rt, `site:${siteKey}`, async () => {
    const item = await appItemByIndex(rt, 'gsi1', `SITEKEY#${siteKey}`);
    // The index may still point at an app whose site key changed; trust the item only.
    return item && item.siteKey === siteKey ? toApp(item) : undefined;
  });
}

/**
 * The app whose current secret key this is. The index finds the candidate; the decrypted
 * current secret decides (constant-time), so a key rotated away a moment ago never passes
 * even while the index still lists it.
 */
export function getAppBySecretKey(rt: Runtime, secretKey: string): Promise<App | undefined> {
  if (!patterns.secretKey.test(secretKey)) return Promise.resolve(undefined);
  const hash = sha256hex(secretKey);
  return cached(rt, `secret:${hash}`, async () => {
    const item = await appItemByIndex(rt, 'gsi2', `SECRET#${hash}`);
    if (!item || typeof item.secretKeyEnc !== 'string') return undefined;
    const current = openSecret(rt.config, item.secretKeyEnc, secretAad(item.appId));
    return safeEqual(current, secretKey) ? toApp(item) : undefined;
  });
}

/** The current secret in clear: the webhook signer's key. Never log the result. */
export async function getAppSecretKey(rt: Runtime, app: Pick<App, 'appId'>): Promise<string> {
  const item = await getAppItem(rt, app.appId);
  if (!item || typeof item.secretKeyEnc !== 'string')
    throw new AppError('SVC_NOT_FOUND', 'Unknown app');
  return openSecret(rt.config, item.secretKeyEnc, secretAad(app.appId));
}

/**
 * Applies a partial change. The write names only the changed attributes (so it never undoes a
 * concurrent rotation) and is conditional on the environment the rules were checked against.
 */
export async function updateApp(rt: Runtime, appId: string, patch: AppPatch): Promise<App> {
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
  const names: Record<string, string> = { '#updatedAt': 'updatedAt', '#env': 'environment' };
  const values: Record<string, unknown> = {
    ':updatedAt': new Date().toISOString(),
    ':env': current.environment,
  };
  const sets = ['#updatedAt = :updatedAt'];
  const removes: string[] = [];
  for (const [k, v] of Object.entries(patch)) {
    if (v === undefined) continue;
    names[`#${k}`] = k;
    if (v === null) {
      removes.push(`#${k}`);
    } else {
      values[`:${k}`] = v;
      sets.push(`#${k} = :${k}`);
    }
  }
  try {
    const r = await rt.dynamo.doc.send(
      new UpdateCommand({
        TableName: rt.tables.entities,
        Key: { pk: appPk(appId), sk: 'APP' },
        UpdateExpression: `SET ${sets.join(', ')}${removes.length ? ` REMOVE ${removes.join(', ')}` : ''}`,
        ConditionExpression: 'attribute_exists(pk) AND #env = :env',
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
        ReturnValues: 'ALL_NEW',
      }),
    );
    return toApp(r.Attributes as AppItem);
  } catch (err) {
    if (isConditionFailure(err))
      throw new AppError('SVC_CONFLICT', 'The app changed meanwhile; retry');
    throw err;
  } finally {
    invalidateCache();
  }
}

/**
 * A new secret key; the old one stops working at once (secret, index entry and version change
 * in one write; this process's cache is cleared, other processes' within the cache TTL).
 */
export async function rotateSecret(
  rt: Runtime,
  appId: string,
): Promise<{ secretKey: string; app: App }> {
  const current = await getApp(rt, appId);
  if (!current) throw new AppError('SVC_NOT_FOUND', 'Unknown app');
  const secretKey = newSecretKey(current.environment === 'sandbox');
  try {
    const r = await rt.dynamo.doc.send(
      new UpdateCommand({
        TableName: rt.tables.entities,
        Key: { pk: appPk(appId), sk: 'APP' },
        UpdateExpression:
          'SET secretKeyEnc = :enc, gsi2pk = :g, secretVersion = secretVersion + :one, updatedAt = :now',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: {
          ':enc': sealSecret(rt.config, secretKey, secretAad(appId)),
          ':g': `SECRET#${sha256hex(secretKey)}`,
          ':one': 1,
          ':now': new Date().toISOString(),
        },
        ReturnValues: 'ALL_NEW',
      }),
    );
    return { secretKey, app: toApp(r.Attributes as AppItem) };
  } catch (err) {
    if (isConditionFailure(err)) throw new AppError('SVC_NOT_FOUND', 'Unknown app');
    throw err;
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
  rt: Runtime,
  appId: string,
  g: { at: string; by: string; twin: { liveAppId: string } | { sandboxAppId: string } },
): Promise<App> {
  const [twinAttr, twinId] = Object.entries(g.twin)[0] as [string, string];
  try {
    const r = await rt.dynamo.doc.send(
      new UpdateCommand({
        TableName: rt.tables.entities,
        Key: { pk: appPk(appId), sk: 'APP' },
        UpdateExpression: 'SET goLiveAt = :at, goLiveBy = :by, #twin = :twin, updatedAt = :at',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeNames: { '#twin': twinAttr },
        ExpressionAttributeValues: { ':at': g.at, ':by': g.by, ':twin': twinId },
        ReturnValues: 'ALL_NEW',
      }),
    );
    return toApp(r.Attributes as AppItem);
  } catch (err) {
    if (isConditionFailure(err)) throw new AppError('SVC_NOT_FOUND', 'Unknown app');
    throw err;
  } finally {
    invalidateCache();
  }
}

/** The widget calls this on every config request; the time is kept to the minute. */
export const VERIFY_RESOLUTION_MS = 60_000;
/** (app, origin) pairs remembered per process; origins are allowlisted, so few per app. */
const MAX_VERIFY_MEMO = 10_000;
const verifyMemo = new WeakMap<Runtime, Map<string, number>>();

/**
 * Records that the widget was seen on an allowlisted origin (the console shows the time and
 * the origin). Anyone can send an allowlisted Origin header, so this must not turn every
 * config call into a write: each process writes at most once a minute per (app, origin), and
 * the write itself is conditional on the stored time being a minute old (a refused
 * conditional write is billed too, hence the in-process memo first).
 */
export async function markWidgetVerified(
  rt: Runtime,
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
    await rt.dynamo.doc.send(
      new UpdateCommand({
        TableName: rt.tables.entities,
        Key: { pk: appPk(appId), sk: 'APP' },
        UpdateExpression: 'SET widgetVerifiedAt = :at, widgetVerifiedOrigin = :origin',
        ConditionExpression:
          'attribute_exists(pk) AND (attribute_not_exists(widgetVerifiedAt) OR attribute_type(widgetVerifiedAt, :nullType) OR widgetVerifiedAt < :before)',
        ExpressionAttributeValues: {
          ':at': at.toISOString(),
          ':origin': origin,
          ':nullType': 'NULL',
          ':before': new Date(at.getTime() - VERIFY_RESOLUTION_MS).toISOString(),
        },
      }),
    );
  } catch (err) {
    if (!isConditionFailure(err)) {
      memo.delete(key); // not recorded: the next call tries again
      throw err;
    }
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
  rt: Runtime,
): Promise<{ checked: number; resealed: number; left: number }> {
  let checked = 0;
  let resealed = 0;
  let left = 0;
  let start: Record<string, unknown> | undefined;
  do {
    const page = await rt.dynamo.doc.send(
      new ScanCommand({
        TableName: rt.tables.entities,
        FilterExpression:
          'sk = :app AND (attribute_exists(secretKeyEnc) OR attribute_exists(referenceKeyEnc))',
        ExpressionAttributeValues: { ':app': 'APP' },
        ProjectionExpression: 'pk, sk, appId, secretKeyEnc, referenceKeyEnc',
        ExclusiveStartKey: start,
      }),
    );
    for (const item of (page.Items ?? []) as Record<string, unknown>[]) {
      for (const { attr, aad: aadOf } of SEALED) {
        if (typeof item[attr] !== 'string') continue;
        checked++;
        const box = item[attr];
        if (!needsReseal(rt.config, box)) continue;
        const aad = aadOf(String(item.appId));
        const moved = await updateIfHolds(rt.dynamo.doc, {
          TableName: rt.tables.entities,
          Key: { pk: item.pk, sk: item.sk },
          UpdateExpression: 'SET #box = :new',
          ConditionExpression: '#box = :old',
          ExpressionAttributeNames: { '#box': attr },
          ExpressionAttributeValues: {
            ':new': sealSecret(rt.config, openSecret(rt.config, box, aad), aad),
            ':old': box,
          },
        });
        if (moved) resealed++;
        else left++;
      }
    }
    start = page.LastEvaluatedKey;
  } while (start);
  return { checked, resealed, left };
}
