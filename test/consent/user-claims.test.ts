import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { resolveAffected } from '../../shared/storage/breaches/affected.js';
import { getReferenceKey } from '../../shared/domain/apps.js';
import { captureConsent } from '../../shared/domain/consent/index.js';
import {
  derivedReferenceOf,
  keys,
  loadPrincipal,
} from '../../shared/storage/consents/repository.js';
import { scrubPrincipal } from '../../shared/domain/consent/scrub.js';
import { getNoticeByTriggerKey } from '../../shared/domain/notices.js';
import { useRecordApi } from './fixture.js';

/**
 * A user id is claimed once per app (repository.ts, `loadUser`): by the principal at the
 * referenceId the user id derives to, holding the user's transaction id (two items per new
 * user); by a claim item there naming the principal of a widget capture the user was linked to;
 * or, only when another principal holds that referenceId, by a user pointer item beside a
 * principal at a random referenceId, whose write checks the derived principal is not the user's.
 */
const { rec, uid, post, get, put } = useRecordApi('consent-user-claims');

const entity = async (key: { pk: string; sk: string }) =>
  (
    await rec.f.p.rt.dynamo.doc.send(
      new GetCommand({ TableName: rec.f.p.rt.tables.entities, Key: key, ConsistentRead: true }),
    )
  ).Item;

/** Another principal takes the referenceId `userId` derives to (as another user id could). */
async function squat(userId: string, appId = rec.a.app.appId) {
  const ref = await derivedReferenceOf(rec.f.p.rt, appId, userId);
  const at = new Date().toISOString();
  await rec.f.p.rt.dynamo.doc.send(
    new UpdateCommand({
      TableName: rec.f.p.rt.tables.entities,
      Key: keys.principal(appId, ref),
      UpdateExpression:
        'SET appId = :a, referenceId = :r, userId = :u, kind = :k, createdAt = :t, updatedAt = :t',
      ExpressionAttributeValues: {
        ':a': appId,
        ':r': ref,
        ':u': `someone-else-${userId}`,
        ':k': 'principal',
        ':t': at,
      },
    }),
  );
  return ref;
}

/** Links a capture to a user (record API, `consentId`). */
const linkTo = (t: typeof rec.n, userId: string, consentId: string) =>
  post(t, { userId, email: 'l@shop.example', consentId, consents: {} });
/** Creates a user's record with one purpose granted. */
const create = (t: typeof rec.n, userId: string) =>
  post(t, { userId, email: 'l@shop.example', consents: { analytics: true } });

async function capture(t = rec.n) {
  const notice = (await getNoticeByTriggerKey(rec.f.p.rt, t.app.appId, 'newsletter_signup'))!;
  return captureConsent(rec.f.p.rt, t.app, notice, {
    mode: 'granular',
    granted: ['essential'],
    language: 'en',
    pageUrl: 'https://shop.example/signup',
    userAgent: 'test',
    ipHash: 'h',
  });
}

describe('claiming a user id', () => {
  it('the same user id derives to the same referenceId in its app, another in another app', async () => {
    const userId = uid();
    const here = await derivedReferenceOf(rec.f.p.rt, rec.a.app.appId, userId);
    expect(here).toMatch(/^SVC-REF-[0-9A-HJKMNP-TV-Z]{8}$/);
    expect(await derivedReferenceOf(rec.f.p.rt, rec.a.app.appId, userId)).toBe(here);
    expect(await derivedReferenceOf(rec.f.p.rt, rec.n.app.appId, userId)).not.toBe(here);
    expect(await derivedReferenceOf(rec.f.p.rt, rec.a.app.appId, `${userId}x`)).not.toBe(here);
    // Each app has its own 32-byte key, sealed in its item.
    const [ka, kn] = await Promise.all([
      getReferenceKey(rec.f.p.rt, rec.a.app.appId),
      getReferenceKey(rec.f.p.rt, rec.n.app.appId),
    ]);
    expect(ka).toHaveLength(32);
    expect(ka.equals(kn)).toBe(false);
    const app = await entity({ pk: `APP#${rec.a.app.appId}`, sk: 'APP' });
    expect(String(app!.referenceKeyEnc)).toMatch(/^v2:/);
    expect(JSON.stringify(app)).not.toContain(ka.toString('base64'));
  });

  it('a taken derived referenceId: a random one and a pointer; found, changed, claimed once', async () => {
    const userId = uid();
    const squatted = await squat(userId);
    const r = await post(rec.a, { userId, email: 'c@shop.example', consents: { analytics: true } });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body.referenceId).not.toBe(squatted);
    expect(await entity(keys.user(rec.a.app.appId, userId))).toMatchObject({
      referenceId: r.body.referenceId,
      transactionId: r.body.transactionId,
    });
    // The squatter is untouched.
    expect(await entity(keys.principal(rec.a.app.appId, squatted))).toMatchObject({
      userId: `someone-else-${userId}`,
    });
    expect((await get(rec.a, userId)).body).toEqual(r.body);
    const changed = await put(rec.a, userId, { consents: { marketing: true } });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({
      referenceId: r.body.referenceId,
      consents: { analytics: true, marketing: true },
    });
    const again = await post(rec.a, {
      userId,
      email: 'c@shop.example',
      consents: { analytics: false },
    });
    expect(again.status).toBe(409);
    // Other lookups by user id find it too (a breach naming its affected users).
    const plain = uid();
    const derived = await post(rec.a, {
      userId: plain,
      email: 'p@shop.example',
      consents: { analytics: true },
    });
    expect(
      await resolveAffected(rec.f.p.rt, rec.a.app.appId, [{ userId }, { userId: plain }]),
    ).toEqual([
      { referenceId: r.body.referenceId, userId },
      { referenceId: derived.body.referenceId, userId: plain },
    ]);
    await expect(
      resolveAffected(rec.f.p.rt, rec.a.app.appId, [{ userId: `someone-else-${userId}x` }]),
    ).rejects.toThrow(/not known/);
  });

  it('linking a capture to a user claimed at its derived referenceId is 409, and the other way round', async () => {
    const derived = uid();
    expect(
      (
        await post(rec.n, {
          userId: derived,
          email: 'd@shop.example',
          consents: { analytics: true },
        })
      ).status,
    ).toBe(201);
    const c = await capture();
    const before = await rec.f.itemsOf(rec.n.app.appId);
    const link = await post(rec.n, {
      userId: derived,
      email: 'd@shop.example',
      consentId: c.transactionId,
      consents: {},
    });
    expect(link.status).toBe(409);
    const after = await rec.f.itemsOf(rec.n.app.appId);
    expect(after.all.length).toBe(before.all.length);
    expect(
      after.kinds('principal').find((p) => p.referenceId === c.referenceId),
    ).not.toHaveProperty('userId');

    const linked = uid();
    const c2 = await capture();
    const ok = await linkTo(rec.n, linked, c2.transactionId);
    expect(ok.status).toBe(201);
    expect(ok.body.referenceId).toBe(c2.referenceId);
    const claim = await create(rec.n, linked);
    expect(claim.status).toBe(409);
    expect((await get(rec.n, linked)).body).toEqual(ok.body);
    // Claimed at its derived referenceId, with no pointer item.
    const at = await derivedReferenceOf(rec.f.p.rt, rec.n.app.appId, linked);
    expect(await entity(keys.principal(rec.n.app.appId, at))).toMatchObject({
      kind: 'claim',
      userId: linked,
      claimOf: c2.referenceId,
      transactionId: c2.transactionId,
    });
    expect(await entity(keys.user(rec.n.app.appId, linked))).toBeUndefined();
    // A claim is no principal: its referenceId names no one.
    expect(await loadPrincipal(rec.f.p.rt, rec.n.app.appId, at)).toBeUndefined();
    expect(await resolveAffected(rec.f.p.rt, rec.n.app.appId, [{ userId: linked }])).toEqual([
      { referenceId: c2.referenceId, userId: linked },
    ]);
    await expect(
      resolveAffected(rec.f.p.rt, rec.n.app.appId, [{ referenceId: at }]),
    ).rejects.toThrow(/not known/);
  });

  it('a capture linked where another principal holds the derived referenceId: a pointer item, claimed once', async () => {
    const linked = uid();
    const squatted = await squat(linked, rec.n.app.appId);
    const c = await capture();
    const ok = await linkTo(rec.n, linked, c.transactionId);
    expect(ok.status).toBe(201);
    expect(await entity(keys.user(rec.n.app.appId, linked))).toMatchObject({
      referenceId: c.referenceId,
    });
    expect(await entity(keys.principal(rec.n.app.appId, squatted))).toMatchObject({
      userId: `someone-else-${linked}`,
    });
    expect((await create(rec.n, linked)).status).toBe(409);
    expect((await get(rec.n, linked)).body).toEqual(ok.body);
  });

  it('the erasure sweep scrubs a linked user’s claim and keeps it; the user comes back at a new referenceId', async () => {
    const linked = uid();
    const c = await capture();
    const ok = await linkTo(rec.n, linked, c.transactionId);
    expect(ok.status).toBe(201);
    const erase = await rec.f.call(
      'POST',
      `/api/public/consents/my-transactions/${c.transactionId}/erase`,
      { headers: { 'x-secret-key': rec.n.secretKey }, body: { referenceId: c.referenceId } },
    );
    expect(erase.status, JSON.stringify(erase.body)).toBe(200);
    const later = new Date(Date.now() + 31 * 86_400_000);
    expect(await scrubPrincipal(rec.f.p.rt, rec.n.app.appId, c.referenceId, later)).toMatchObject({
      status: 'scrubbed',
      counts: { userPointers: 1 },
    });
    const at = await derivedReferenceOf(rec.f.p.rt, rec.n.app.appId, linked);
    const claim = await entity(keys.principal(rec.n.app.appId, at));
    expect(claim).toMatchObject({ kind: 'claim', claimOf: c.referenceId });
    expect(claim).not.toHaveProperty('userId');
    expect(JSON.stringify(claim)).not.toContain(linked);
    expect((await get(rec.n, linked)).status).toBe(404);
    const back = await create(rec.n, linked);
    expect(back.status, JSON.stringify(back.body)).toBe(201);
    expect([at, c.referenceId]).not.toContain(back.body.referenceId);
    expect((await get(rec.n, linked)).body).toEqual(back.body);
  });

  it('a link and a new record racing for one user id: exactly one wins', async () => {
    for (let round = 0; round < 5; round++) {
      const userId = uid();
      const c = await capture();
      const results = await Promise.all([
        post(rec.n, { userId, email: 'r@shop.example', consentId: c.transactionId, consents: {} }),
        post(rec.n, { userId, email: 'r@shop.example', consents: { analytics: true } }),
      ]);
      expect(results.map((r) => r.status).sort()).toEqual([201, 409]);
      const winner = results.find((r) => r.status === 201)!;
      expect((await get(rec.n, userId)).body).toEqual(winner.body);
    }
  });

  it('a user who comes back after the erasure sweep gets a new referenceId', async () => {
    const userId = uid();
    const first = await post(rec.a, {
      userId,
      email: 'e@shop.example',
      consents: { analytics: true },
    });
    expect(first.status).toBe(201);
    const erase = await rec.f.call(
      'POST',
      `/api/public/consents/my-transactions/${first.body.transactionId}/erase`,
      {
        headers: { 'x-secret-key': rec.a.secretKey },
        body: { referenceId: first.body.referenceId },
      },
    );
    expect(erase.status, JSON.stringify(erase.body)).toBe(200);
    const later = new Date(Date.now() + 31 * 86_400_000);
    expect(
      await scrubPrincipal(rec.f.p.rt, rec.a.app.appId, first.body.referenceId, later),
    ).toMatchObject({ status: 'scrubbed' });
    expect((await get(rec.a, userId)).status).toBe(404);

    const back = await post(rec.a, {
      userId,
      email: 'e@shop.example',
      consents: { analytics: false },
    });
    expect(back.status).toBe(201);
    expect(back.body.referenceId).not.toBe(first.body.referenceId);
    expect((await get(rec.a, userId)).body).toEqual(back.body);
  });
});
