import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { recordUuid, transactionOfRecord } from '../../shared/domain/ids.js';
import { secret, usePublicApi, PUBLIC_TRANSACTIONS as P } from './fixture.js';

/**
 * Record ids are derived from their transaction's id (shared/domain/ids.ts), so a transaction
 * writes no record pointer items, and a record is found by its id alone.
 */
const { pub, capture, op } = usePublicApi('consent-record-ids');

const recordIdsOf = async (transactionId: string): Promise<string[]> => {
  const r = await pub.f.call('GET', `${P}/${transactionId}`, { headers: secret(pub.a) });
  expect(r.status).toBe(200);
  return r.body.records.map((x: { recordId: string }) => x.recordId);
};

describe('record ids derived from the transaction id', () => {
  it('a capture writes no record pointers; each record is found by its id', async () => {
    const c = await capture();
    expect(c.transactionId.endsWith('00')).toBe(true);
    const ids = await recordIdsOf(c.transactionId);
    expect(ids).toEqual([1, 2, 3].map((n) => recordUuid(c.transactionId, n)));
    for (const id of ids) expect(transactionOfRecord(id)).toBe(c.transactionId);

    const items = await pub.f.itemsOf(pub.a.app.appId);
    const pointers = items.all.filter((i) => String(i.pk).includes('#REC#'));
    expect(pointers).toEqual([]);
    expect(items.kinds('record')).toEqual([]);
    // All a widget capture stores: its principal and its transaction item, which carries the
    // events (no outbox item: the relay's keys, the events themselves rebuilt from the item)
    // and its first timer (no timers item).
    const mine = items.all.filter((i) => i.referenceId === c.referenceId);
    expect(mine.map((i) => i.kind).sort()).toEqual(['principal', 'transaction']);
    const txn = mine.find((i) => i.kind === 'transaction')!;
    expect(txn.obxt).toEqual(expect.any(String));
    expect(txn).not.toHaveProperty('obx');
    expect(txn).not.toHaveProperty('history');
    expect(txn.duesk).toEqual(expect.stringContaining(c.transactionId));
    const timers = await pub.f.p.rt.dynamo.doc.send(
      new ScanCommand({
        TableName: pub.f.p.rt.tables.timers,
        FilterExpression: 'contains(sk, :t)',
        ExpressionAttributeValues: { ':t': c.transactionId },
        ConsistentRead: true,
      }),
    );
    expect(timers.Items).toEqual([]);

    const r = await op(`/records/${ids[1]}/revoke`, { referenceId: c.referenceId });
    expect(r.status).toBe(200);
    expect(r.body.transactionId).toBe(c.transactionId);
    expect(r.body.records.map((x: { state: string }) => x.state)).toEqual([
      'granted',
      'revoked',
      'denied',
    ]);
    // Its first change wrote out what the item left implied: the creation's events, packed,
    // and its history.
    const after = (await pub.f.itemsOf(pub.a.app.appId)).all.find(
      (i) => i.kind === 'transaction' && i.referenceId === c.referenceId,
    )!;
    expect(after.obx).toBeInstanceOf(Uint8Array);
    expect(after.obxt).toBe(txn.obxt);
    expect(
      (after.history as { recordId: string; operation: string }[]).map((h) => [
        h.recordId,
        h.operation,
      ]),
    ).toEqual([...ids.map((id) => [id, 'create']), [ids[1], 'revoke']]);
  });

  it('an id derived from a real transaction but naming no record of it is 404, as is another principal’s', async () => {
    const c = await capture();
    const absent = recordUuid(c.transactionId, 9);
    const r = await op(`/records/${absent}/grant`);
    expect(r.status).toBe(404);
    // The derived transaction is the transaction itself, not a record.
    expect((await op(`/records/${c.transactionId}/grant`)).status).toBe(404);

    const other = await capture();
    const [first] = await recordIdsOf(other.transactionId);
    const wrongPrincipal = await op(`/records/${first}/revoke`, { referenceId: c.referenceId });
    expect(wrongPrincipal.status).toBe(404);
  });

  it('another app cannot reach a record by its derived id', async () => {
    const c = await capture();
    const [, analytics] = await recordIdsOf(c.transactionId);
    const b = await pub.f.createApp({
      notice: { triggerKey: 'signup', purposes: [{ name: 'analytics' }] },
    });
    const r = await pub.f.call('POST', `${P}/records/${analytics}/revoke`, {
      headers: secret(b),
      body: {},
    });
    expect(r.status).toBe(404);
    expect(JSON.stringify(r.body)).not.toContain(c.referenceId);
  });
});
