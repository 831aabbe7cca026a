import { randomBytes } from 'node:crypto';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import { postbackService } from '../../services/postback/index.js';
import {
  createApp,
  getReferenceKey,
  resealSecrets,
  rotateSecret,
} from '../../shared/domain/apps.js';
import { POSTBACK_PATH } from '../../shared/domain/consent/events.js';
import { encrypt, fingerprintKid } from '../../shared/domain/crypto.js';
import { newDispatchId, newReferenceId } from '../../shared/domain/ids.js';
import type { RunningProcess } from '../../bin/process.js';
import { client } from './client.js';
import { testProcess } from '../helpers/stack.js';

/**
 * Rotating the encryption key on the real stack, as docs/security.md describes it: secrets
 * sealed under SVC_ENCRYPTION_KEY (and older `v1.` boxes without a key id) keep working once
 * a new key leads SVC_ENCRYPTION_KEYS, `resealSecrets` moves them all under the new key, and
 * then the old key can go. Each stage is a process of its own on the same tables; a secret
 * key "works" when a postback with it is authenticated (404 for an unknown dispatch, not 401).
 */

const A = randomBytes(32).toString('base64');
const B = randomBytes(32).toString('base64');
const TABLE_PREFIX = `t_rotation_${randomBytes(3).toString('hex')}_`;
const running: RunningProcess[] = [];

afterAll(async () => {
  for (const p of running) await p.close();
});

async function stage(env: Record<string, string>) {
  const p = await testProcess('key-rotation', [postbackService], [], {
    TABLE_PREFIX,
    CREDENTIAL_CACHE_TTL_MS: '0',
    ...env,
  });
  running.push(p);
  const call = (secretKey: string) =>
    client(p.url)(
      'POST',
      POSTBACK_PATH,
      {
        dispatchId: newDispatchId(),
        referenceId: newReferenceId(),
        status: 'processed',
        completedAt: new Date().toISOString(),
        risk: 'none',
        tags: [],
        actions: [],
      },
      { 'x-secret-key': secretKey },
    );
  const works = async (secretKey: string) => {
    const r = await call(secretKey);
    expect([401, 404]).toContain(r.status);
    return r.status === 404;
  };
  return { p, works, call };
}

const newApp = (s: Awaited<ReturnType<typeof stage>>) =>
  createApp(s.p.rt, {
    name: 'rotation',
    environment: 'sandbox',
    webhookUrl: 'http://127.0.0.1:9/hooks',
    allowedOrigins: ['https://shop.example'],
    contactEmail: 'ops@shop.example',
  });

async function box(
  s: Awaited<ReturnType<typeof stage>>,
  appId: string,
  attr = 'secretKeyEnc',
): Promise<string> {
  const r = await s.p.rt.dynamo.doc.send(
    new GetCommand({ TableName: s.p.rt.tables.entities, Key: { pk: `APP#${appId}`, sk: 'APP' } }),
  );
  return String(r.Item![attr]);
}

describe('encryption key rotation', () => {
  it('old secrets keep working through the rotation, and end up under the new key', async () => {
    // Before: one key. A new secret names it; an older `v1.` box names none.
    const before = await stage({ SVC_ENCRYPTION_KEY: A });
    const fresh = await newApp(before);
    expect(await box(before, fresh.app.appId)).toMatch(
      new RegExp(`^v2:${fingerprintKid(Buffer.from(A, 'base64'))}:`),
    );
    const legacy = await newApp(before);
    await before.p.rt.dynamo.doc.send(
      new UpdateCommand({
        TableName: before.p.rt.tables.entities,
        Key: { pk: `APP#${legacy.app.appId}`, sk: 'APP' },
        UpdateExpression: 'SET secretKeyEnc = :v1',
        ExpressionAttributeValues: {
          ':v1': encrypt(Buffer.from(A, 'base64'), legacy.secretKey, `app:${legacy.app.appId}`),
        },
      }),
    );
    expect(await box(before, legacy.app.appId)).toMatch(/^v1\./);
    const legacyReferenceKey = await getReferenceKey(before.p.rt, legacy.app.appId);
    expect(legacyReferenceKey).toHaveLength(32);
    expect(await before.works(fresh.secretKey)).toBe(true);
    expect(await before.works(legacy.secretKey)).toBe(true);
    expect(await before.works(`svc_sk_test_${'x'.repeat(40)}`)).toBe(false);

    // Step 1: the new key leads; the old one is still there (kept as SVC_ENCRYPTION_KEY).
    const during = await stage({ SVC_ENCRYPTION_KEYS: `k2:${B}`, SVC_ENCRYPTION_KEY: A });
    expect(await during.works(fresh.secretKey)).toBe(true);
    expect(await during.works(legacy.secretKey)).toBe(true);
    const rotated = await rotateSecret(during.p.rt, fresh.app.appId);
    expect(await box(during, fresh.app.appId)).toMatch(/^v2:k2:/);

    // Step 2: reseal everything under k2.
    // Two apps, each with a secret key and a reference key: the legacy secret and both
    // reference keys (sealed under A) move; the rotated secret is under k2 already.
    expect(await resealSecrets(during.p.rt)).toEqual({ checked: 4, resealed: 3, left: 0 });
    expect(await box(during, legacy.app.appId)).toMatch(/^v2:k2:/);
    expect(await box(during, legacy.app.appId, 'referenceKeyEnc')).toMatch(/^v2:k2:/);
    expect(await resealSecrets(during.p.rt)).toEqual({ checked: 4, resealed: 0, left: 0 });

    // Step 3: the old key is gone; everything still works.
    const after = await stage({ SVC_ENCRYPTION_KEYS: `k2:${B}` });
    expect(await after.works(rotated.secretKey)).toBe(true);
    expect(await after.works(legacy.secretKey)).toBe(true);
    expect(await after.works(fresh.secretKey)).toBe(false); // rotated away in step 1
    // The reference key (user ids → referenceIds) is the same key, opened under k2.
    expect(await getReferenceKey(after.p.rt, legacy.app.appId)).toEqual(legacyReferenceKey);

    // The old key alone can no longer open them: they really moved. A missing key is the
    // operator's error, not the caller's: 500 (logged with the key id), never a 401.
    const oldOnly = await stage({ SVC_ENCRYPTION_KEY: A });
    expect((await oldOnly.call(legacy.secretKey)).status).toBe(500);
  });
});
