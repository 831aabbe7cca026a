import { gunzipSync } from 'node:zlib';
import { GetCommand, QueryCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { keyedHash } from '../../shared/domain/crypto.js';
import { scrubPrincipal } from '../../shared/domain/consent/scrub.js';
import { keys } from '../../shared/storage/consents/repository.js';
import { dispatchItems } from '../../shared/storage/ledger/dispatches.js';
import { sha256Hex } from '../../shared/domain/ledger/hash.js';
import { verifyDispatchChain } from '../../shared/ledger/queries.js';
import { startPipeline, type Pipeline, type PipelineApp } from './fixture.js';

/**
 * The 30-day erasure sweep end to end, with time scale 86400 (a day is a second, 30 days are
 * 30 s, reached by moving the workers' clock): an erase with no confirming postback goes
 * at_risk, then unconfirmed_erasure, and 30 days after the erase the person's e-mail and user
 * id are gone from the service while referenceId, states and a keyed hash remain.
 */
let f: Pipeline;
let a: PipelineApp;

beforeAll(async () => {
  f = await startPipeline('compliance-erasure');
  a = await f.createApp(86_400);
});
afterAll(async () => {
  await f?.close();
});

const DAY = 1000; // one day at scale 86400

async function principalItems(referenceId: string) {
  const r = await f.rt.dynamo.doc.send(
    new QueryCommand({
      TableName: f.rt.tables.entities,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': keys.principal(a.appId, referenceId).pk },
      ConsistentRead: true,
    }),
  );
  return r.Items ?? [];
}

async function createUser(userId: string, consents: Record<string, boolean>) {
  const r = await f.http(
    'POST',
    '/api/v1/consents',
    { userId, email: `${userId}@mail.example`, consents },
    f.bearer(a),
  );
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body as { referenceId: string; transactionId: string };
}

describe('data.deleted without confirmation, and the erasure sweep', () => {
  it('flags at_risk at 24 h, unconfirmed_erasure at 30 days, then scrubs the person', async () => {
    const userId = 'erased-user-1';
    const u = await createUser(userId, { marketing: true, analytics: true });
    const erase = await f.http(
      'POST',
      `/api/public/consents/my-transactions/${u.transactionId}/erase`,
      { referenceId: u.referenceId },
      f.secret(a),
    );
    expect(erase.status, JSON.stringify(erase.body)).toBe(200);
    expect(erase.body.status).toBe('erased');
    const hook = await f.waitForWebhook(u.referenceId, 'data.deleted');
    expect(hook.event.data.userId).toBe(userId);
    const created = Date.parse(hook.event.createdAt);

    await f.waitForFlags(hook.dispatchId, ['at_risk']);
    // Before 30 days nothing is scrubbed.
    const early = await principalItems(u.referenceId);
    expect(early.find((i) => i.sk === 'PRINCIPAL')).toMatchObject({
      userId,
      email: `${userId}@mail.example`,
    });
    // The transaction still carries the events it was created with (they name the user).
    const earlyTxn = early.find((i) => String(i.sk).startsWith('TXN#'))!;
    expect(earlyTxn.obx).toBeInstanceOf(Uint8Array);
    expect(gunzipSync(earlyTxn.obx as Uint8Array).toString('utf8')).toContain(userId);

    f.clock.advance(31 * DAY);
    const d = await f.waitForFlags(hook.dispatchId, ['at_risk', 'unconfirmed_erasure']);
    expect(d.flagHistory[1]).toEqual({
      flag: 'unconfirmed_erasure',
      at: new Date(created + 30 * DAY).toISOString(),
      cause: 'erasure_unconfirmed',
    });

    const items = await vi.waitFor(
      async () => {
        const it = await principalItems(u.referenceId);
        expect(it.find((i) => i.sk === 'PRINCIPAL')).not.toHaveProperty('email');
        return it;
      },
      { timeout: 15_000, interval: 100 },
    );
    const hash = keyedHash(f.rt.config, 'user', userId);
    const principal = items.find((i) => i.sk === 'PRINCIPAL')!;
    expect(principal).not.toHaveProperty('userId');
    expect(principal).toMatchObject({ referenceId: u.referenceId, userIdHash: hash });
    const txn = items.find((i) => String(i.sk).startsWith('TXN#'))!;
    expect(txn).not.toHaveProperty('userId');
    for (const carried of ['obx', 'obxw', 'obxs', 'obxt']) expect(txn).not.toHaveProperty(carried);
    expect(txn).toMatchObject({ transactionId: u.transactionId, userIdHash: hash });
    expect(txn.records.map((r: { state: string }) => r.state)).toEqual(['erased', 'erased']);
    const history = txn.history as { operation: string; to: string }[];
    expect(history.map((h) => [h.operation, h.to])).toEqual(
      expect.arrayContaining([
        ['create', 'granted'],
        ['erase', 'erased'],
      ]),
    );
    // Nothing anywhere in the principal's items still holds the e-mail or the user id.
    expect(JSON.stringify(items)).not.toContain(userId);
    const pointer = await f.rt.dynamo.doc.send(
      new GetCommand({ TableName: f.rt.tables.entities, Key: keys.user(a.appId, userId) }),
    );
    expect(pointer.Item).toBeUndefined();
    expect((await f.http('GET', `/api/v1/consents/${userId}`, undefined, f.bearer(a))).status).toBe(
      404,
    );

    // The ledger's stored webhook bodies lose the user id too; the chain (bodySha256) stands.
    const dispatches = [hook, await f.waitForWebhook(u.referenceId, 'consent.created')].map(
      (h) => h.dispatchId,
    );
    for (const id of dispatches) {
      await vi.waitFor(
        async () => {
          const head = (await dispatchItems(f.rt, id))[0]!;
          expect(JSON.parse(String(head.body)).data.userId).toBeNull();
          // What was sent is still proven by its hash; what is kept is not what was sent.
          expect(head.bodySha256).not.toBe(sha256Hex(String(head.body)));
        },
        { timeout: 10_000, interval: 100 },
      );
      expect(await verifyDispatchChain(f.rt, id)).toMatchObject({ ok: true });
    }
    await f.waitForMetric('svc_unconfirmed_erasures', {}, 1);
  });

  it('keeps the identity of a principal who still has live consent', async () => {
    const userId = 'partly-erased-user';
    const u = await createUser(userId, { marketing: true, analytics: true });
    const txn = await f.http(
      'GET',
      `/api/public/consents/my-transactions/${u.transactionId}?referenceId=${u.referenceId}`,
      undefined,
      f.secret(a),
    );
    const recordId = txn.body.records[0].recordId as string;
    const erase = await f.http(
      'POST',
      `/api/public/consents/my-transactions/records/${recordId}/erase`,
      { referenceId: u.referenceId },
      f.secret(a),
    );
    expect(erase.status).toBe(200);
    expect(erase.body.status).not.toBe('erased');
    // No sweep is scheduled for a partial erase, and a sweep run anyway leaves the person alone.
    const scrubs = await f.rt.dynamo.doc.send(
      new ScanCommand({
        TableName: f.rt.tables.timers,
        FilterExpression: 'kind = :k AND referenceId = :r',
        ExpressionAttributeValues: { ':k': 'scrub', ':r': u.referenceId },
        ConsistentRead: true,
      }),
    );
    expect(scrubs.Items).toEqual([]);
    const later = new Date(f.clock.now() + 60 * DAY);
    expect(await scrubPrincipal(f.rt, a.appId, u.referenceId, later)).toEqual({
      status: 'not_erased',
    });
    const principal = (await principalItems(u.referenceId)).find((i) => i.sk === 'PRINCIPAL');
    expect(principal).toMatchObject({ userId, email: `${userId}@mail.example` });
  });
});
