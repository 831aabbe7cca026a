import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it, vi } from 'vitest';
import { createUserConsent } from '../../shared/domain/consent/index.js';
import { derivedReferenceOf, keys } from '../../shared/storage/consents/repository.js';
import { newTransactionId } from '../../shared/domain/consent/writer.js';
import { useRecordApi } from './fixture.js';

/**
 * A new principal and its first transaction are two conditional puts, the principal first
 * (writer.ts, `split`), against the real DynamoDB Local and Kafka. What a creation cut short
 * between them leaves, a principal with no transaction, is no consent, and the user's next
 * creation takes it over.
 */
const { rec, uid, post, get } = useRecordApi('consent-split-creation');

/** What AWS would bill for this process's writes to `entities` so far (the model). */
async function billed(): Promise<Record<string, number>> {
  const m = await rec.f.p.rt.registry
    .getSingleMetric('svc_dynamodb_billed_write_units_total')!
    .get();
  const out: Record<string, number> = {};
  for (const v of m.values.filter((x) => x.labels.table === 'entities'))
    out[String(v.labels.operation)] = (out[String(v.labels.operation)] ?? 0) + v.value;
  return out;
}

const entity = async (key: { pk: string; sk: string }) =>
  (
    await rec.f.p.rt.dynamo.doc.send(
      new GetCommand({ TableName: rec.f.p.rt.tables.entities, Key: key, ConsistentRead: true }),
    )
  ).Item;

describe('a new principal and its first transaction as two puts', () => {
  it('writes both, each alone and billed once, with the transaction carrying the events', async () => {
    const userId = uid();
    const before = await billed();
    const r = await post(rec.a, { userId, email: 'a@shop.example', consents: { analytics: true } });
    const after = await billed();
    // Two puts (1 + 1) and the transaction's first-timer index entry (1); the relay finds the
    // transaction through the table's stream, with no index entry. No transaction.
    expect((after.PutItem ?? 0) - (before.PutItem ?? 0)).toBe(3);
    expect(after.TransactWriteItems ?? 0).toBe(before.TransactWriteItems ?? 0);
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    const { referenceId, transactionId } = r.body as { referenceId: string; transactionId: string };
    expect(await entity(keys.principal(rec.a.app.appId, referenceId))).toMatchObject({
      userId,
      userTransactionId: transactionId,
    });
    expect(
      await entity(keys.transaction(rec.a.app.appId, referenceId, transactionId)),
    ).toMatchObject({ transactionId, version: 1 });
    const events = await rec.f.waitForEvents(referenceId, 2);
    expect(events.map((e) => [e.type, e.data.consentId])).toEqual([
      ['consent.created', transactionId],
      ['consent.granted', transactionId],
    ]);
  });

  it('a user whose creation stopped between the two puts creates its record again: the principal is taken over', async () => {
    const { rt } = rec.f.p;
    const appId = rec.a.app.appId;
    const userId = uid();
    const ref = await derivedReferenceOf(rt, appId, userId);
    const left = newTransactionId(ref);
    const at = new Date(Date.now() - 60_000).toISOString();
    // What `split` leaves when its process dies after the principal's put.
    await rt.dynamo.doc.send(
      new PutCommand({
        TableName: rt.tables.entities,
        Item: {
          ...keys.principal(appId, ref),
          kind: 'principal',
          appId,
          referenceId: ref,
          userId,
          email: 'first@shop.example',
          userTransactionId: left,
          createdAt: at,
          updatedAt: at,
          lastActiveAt: at,
        },
      }),
    );
    expect((await get(rec.a, userId)).status).toBe(404);
    const r = await post(rec.a, {
      userId,
      email: 'second@shop.example',
      consents: { analytics: true },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body).toMatchObject({
      referenceId: ref,
      transactionId: left,
      email: 'second@shop.example',
    });
    expect(await entity(keys.principal(appId, ref))).toMatchObject({
      email: 'second@shop.example',
      userTransactionId: left,
    });
    expect(await entity(keys.transaction(appId, ref, left))).toMatchObject({ version: 1 });
    expect((await get(rec.a, userId)).body).toMatchObject({ consents: { analytics: true } });
    expect((await rec.f.waitForEvents(ref, 2)).map((e) => e.data.consentId)).toEqual([left, left]);
    const again = await post(rec.a, {
      userId,
      email: 'x@shop.example',
      consents: { analytics: true },
    });
    expect(again.status).toBe(409);
  });

  it('a creation given up between the two puts removes its principal, and the user can create again', async () => {
    const { rt } = rec.f.p;
    const appId = rec.a.app.appId;
    const userId = uid();
    const ref = await derivedReferenceOf(rt, appId, userId);
    const gaveUp = new AbortController();
    const group = rt.outbox.group;
    const original = group.single.bind(group);
    // The caller hangs up right after the principal's put: the transaction is not sent.
    const spy = vi.spyOn(group, 'single').mockImplementationOnce(async (item, signal) => {
      await original(item, signal);
      gaveUp.abort();
    });
    try {
      await expect(
        createUserConsent(
          {
            rt,
            app: rec.a.app,
            actor: { source: 'api', credential: 'test' },
            signal: gaveUp.signal,
          },
          { userId, email: 'gone@shop.example', consents: { analytics: true } },
        ),
      ).rejects.toMatchObject({ code: 'SVC_UNAVAILABLE' });
    } finally {
      spy.mockRestore();
    }
    expect(await entity(keys.principal(appId, ref))).toBeUndefined();
    const r = await post(rec.a, {
      userId,
      email: 'back@shop.example',
      consents: { analytics: true },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body).toMatchObject({ referenceId: ref });
  });

  it('a put sent again after it applied (the SDK retrying a timeout) is found to be its own, not a conflict', async () => {
    const { rt } = rec.f.p;
    const put = {
      Put: {
        TableName: rt.tables.entities,
        Item: { pk: `APP#${rec.a.app.appId}#REF#retry-${uid()}`, sk: 'PRINCIPAL', createdAt: 't1' },
        ConditionExpression: 'attribute_not_exists(pk)',
      },
    };
    const group = rt.outbox.group;
    await group.single(put);
    const same = (stored: Record<string, unknown>) => stored.createdAt === 't1';
    await expect(group.single(put, undefined, same)).resolves.toBeUndefined();
    await expect(group.single(put)).rejects.toMatchObject({
      name: 'TransactionCanceledException',
      CancellationReasons: [{ Code: 'ConditionalCheckFailed' }],
    });
    const other = (stored: Record<string, unknown>) => stored.createdAt === 't2';
    await expect(group.single(put, undefined, other)).rejects.toMatchObject({
      name: 'TransactionCanceledException',
    });
  });
});
