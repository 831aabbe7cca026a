import { CreateTableCommand } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { createTableInput, tableDefs } from '../../infra/definitions/tables.js';
import type { StoredTransaction } from '../../shared/domain/consent/model.js';
import { keys, loadTransaction, putTransaction } from '../../shared/domain/consent/repository.js';
import {
  TXN_INDEX,
  TXN_KEY,
  transactionIndexKeys,
  txnIndexChecked,
} from '../../shared/domain/consent/txn-index.js';
import { recordUuid, uuidv7 } from '../../shared/domain/ids.js';
import { createRuntime } from '../../shared/runtime.js';
import { itemBytes, putUnits } from '../../shared/storage/billing.js';
import { testConfig, testLogger } from '../helpers/stack.js';
import { secret, usePublicApi, PUBLIC_TRANSACTIONS as P } from './fixture.js';

/**
 * A transaction is found by its id through the `entities` table's keys-only `txn` index
 * (shared/domain/consent/txn-index.ts), on real DynamoDB Local: a new transaction writes no
 * whole-item copy to `gsi1`; one written before the index is still found through `gsi1` and
 * moves to `txn` when it is next written; a table whose index is not there yet gets both keys.
 */
const { pub, capture, op } = usePublicApi('consent-txn-index');

const rawTransaction = async (referenceId: string, transactionId: string) =>
  (
    await pub.f.p.rt.dynamo.doc.send(
      new GetCommand({
        TableName: pub.f.p.rt.tables.entities,
        Key: keys.transaction(pub.a.app.appId, referenceId, transactionId),
        ConsistentRead: true,
      }),
    )
  ).Item!;

const getById = (transactionId: string) =>
  pub.f.call('GET', `${P}/${transactionId}`, { headers: secret(pub.a) });

const entitiesShape = {
  keys: ['pk', 'sk'],
  indexes: tableDefs.entities.indexes,
};

/** A transaction as stored, with one granted record derived from its id (or none). */
function storedTransaction(
  appId: string,
  transactionId: string,
  referenceId: string,
  withRecord: boolean,
): StoredTransaction {
  const now = new Date().toISOString();
  return {
    appId,
    transactionId,
    referenceId,
    processId: 'signup',
    noticeId: null,
    noticeVersion: null,
    language: 'en',
    source: 'api',
    createdAt: now,
    updatedAt: now,
    expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
    records: withRecord
      ? [
          {
            recordId: recordUuid(transactionId, 1),
            purpose: 'analytics',
            state: 'granted',
            updatedAt: now,
          },
        ]
      : [],
    version: 1,
  };
}

describe('transactions by id', () => {
  it('a new transaction carries only its txn key, is found by id, and bills less than a whole copy in gsi1', async () => {
    expect(await txnIndexChecked(pub.f.p.rt)).toBe(true);
    const c = await capture();
    const item = await rawTransaction(c.referenceId, c.transactionId);
    expect(item[TXN_KEY]).toBe(`APP#${pub.a.app.appId}#TXN#${c.transactionId}`);
    expect(item).not.toHaveProperty('gsi1pk');
    expect(item).not.toHaveProperty('gsi1sk');
    const r = await getById(c.transactionId);
    expect(r.status).toBe(200);
    expect(r.body).not.toHaveProperty(TXN_KEY);
    expect(r.body.referenceId).toBe(c.referenceId);

    // What AWS would bill (model): the same item as written before the index, in gsi1 (whole,
    // over 1 KB) instead of txn (keys only, one unit), costs more.
    const { [TXN_KEY]: _k, ...rest } = item;
    const before = { ...rest, ...keys.transactionIndex(pub.a.app.appId, c.transactionId) };
    expect(itemBytes(before)).toBeGreaterThan(1024);
    expect(
      putUnits(before, entitiesShape, true) - putUnits(item, entitiesShape, true),
    ).toBeGreaterThanOrEqual(1);
  });

  it('a transaction written before the index is found through gsi1, and its next write moves it to txn', async () => {
    const c = await capture();
    const rt = pub.f.p.rt;
    // An id its records derive from (ids.ts), so a record is found through the transaction.
    const transactionId = uuidv7().replace(/..$/, '00');
    const legacy = storedTransaction(pub.a.app.appId, transactionId, c.referenceId, true);
    const { [TXN_KEY]: _k, ...old } = putTransaction(rt, legacy).Put!.Item as Record<
      string,
      unknown
    >;
    await rt.dynamo.doc.send(
      new PutCommand({
        TableName: rt.tables.entities,
        Item: { ...old, ...keys.transactionIndex(legacy.appId, transactionId) },
      }),
    );
    expect((await getById(transactionId)).status).toBe(200);

    const recordId = legacy.records[0]!.recordId;
    const revoked = await op(`/records/${recordId}/revoke`, { referenceId: c.referenceId });
    expect(revoked.status).toBe(200);
    const item = await rawTransaction(c.referenceId, transactionId);
    expect(item[TXN_KEY]).toBe(`APP#${legacy.appId}#TXN#${transactionId}`);
    expect(item).not.toHaveProperty('gsi1pk');
    const again = await getById(transactionId);
    expect(again.status).toBe(200);
    expect(again.body.records[0].state).toBe('revoked');
    // Nothing of it is left in gsi1.
    const inGsi1 = await rt.dynamo.doc.send(
      new QueryCommand({
        TableName: rt.tables.entities,
        IndexName: 'gsi1',
        KeyConditionExpression: 'gsi1pk = :pk',
        ExpressionAttributeValues: {
          ':pk': keys.transactionIndex(legacy.appId, transactionId).gsi1pk,
        },
      }),
    );
    expect(inGsi1.Items).toEqual([]);
  });

  it('on a table without the index yet, a transaction carries both keys and is found through gsi1', async () => {
    const config = testConfig('consent-txn-index-old');
    const rt = createRuntime(config, testLogger(config));
    try {
      const old = {
        ...tableDefs.entities,
        indexes: tableDefs.entities.indexes.filter((ix) => ix.name !== TXN_INDEX),
      };
      await rt.dynamo.client.send(
        new CreateTableCommand(createTableInput(config.TABLE_PREFIX, old)),
      );
      expect(await txnIndexChecked(rt)).toBe(false);
      const appId = pub.a.app.appId;
      const transactionId = uuidv7();
      expect(transactionIndexKeys(rt, appId, transactionId)).toEqual({
        [TXN_KEY]: `APP#${appId}#TXN#${transactionId}`,
        ...keys.transactionIndex(appId, transactionId),
      });
      const t = storedTransaction(appId, transactionId, 'SVC-REF-OLDTABLE', false);
      const put = putTransaction(rt, t).Put!;
      await rt.dynamo.doc.send(new PutCommand({ TableName: put.TableName, Item: put.Item }));
      // The txn index cannot be read here; gsi1 answers.
      expect((await loadTransaction(rt, appId, transactionId))?.referenceId).toBe(
        'SVC-REF-OLDTABLE',
      );
      expect(await loadTransaction(rt, appId, uuidv7())).toBeUndefined();
    } finally {
      await rt.close();
    }
  });
});
