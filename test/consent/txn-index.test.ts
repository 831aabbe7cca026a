import { CreateTableCommand } from '@aws-sdk/client-dynamodb';
import { PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { createTableInput, tableDefs } from '../../infra/definitions/tables.js';
import type { StoredTransaction } from '../../shared/domain/consent/model.js';
import { keys, loadTransaction, putTransaction } from '../../shared/domain/consent/repository.js';
import {
  TXN_INDEX,
  TXN_KEY,
  transactionIndexKeys,
  txnIndexChecked,
  txnKey,
} from '../../shared/domain/consent/txn-index.js';
import {
  recordUuid,
  referenceOfTransaction,
  transactionUuid,
  uuidv7,
} from '../../shared/domain/ids.js';
import { createRuntime } from '../../shared/runtime.js';
import { putUnits } from '../../shared/storage/billing.js';
import { testConfig, testLogger } from '../helpers/stack.js';
import { secret, transactionItem, usePublicApi, PUBLIC_TRANSACTIONS as P } from './fixture.js';

/**
 * A transaction is found by its id (shared/domain/consent/txn-index.ts), on real DynamoDB Local:
 * a new one's id carries its referenceId, so it is read where its id says and written to no
 * index; one whose id does not (created before) is found through the keys-only `txn` index; one
 * written before that index is found through `gsi1` and moves to `txn` when it is next written;
 * a table whose index is not there yet gets both keys.
 */
const { pub, capture, op } = usePublicApi('consent-txn-index');

const rawTransaction = async (referenceId: string, transactionId: string) =>
  (await transactionItem(pub.f.p.rt, pub.a.app.appId, referenceId, transactionId))!;

/** The `txn` index's entries for a transaction id. */
const byTxnIndex = async (transactionId: string) =>
  (
    await pub.f.p.rt.dynamo.doc.send(
      new QueryCommand({
        TableName: pub.f.p.rt.tables.entities,
        IndexName: TXN_INDEX,
        KeyConditionExpression: '#k = :k',
        ExpressionAttributeNames: { '#k': TXN_KEY },
        ExpressionAttributeValues: { ':k': txnKey(pub.a.app.appId, transactionId) },
      }),
    )
  ).Items ?? [];

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
  it('a new transaction carries its referenceId in its id, is in no index, is found by id, and bills one unit less than with its txn key', async () => {
    expect(await txnIndexChecked(pub.f.p.rt)).toBe(true);
    const c = await capture();
    expect(referenceOfTransaction(c.transactionId)).toBe(c.referenceId);
    const item = await rawTransaction(c.referenceId, c.transactionId);
    expect(item).not.toHaveProperty(TXN_KEY);
    expect(item).not.toHaveProperty('gsi1pk');
    expect(item).not.toHaveProperty('gsi1sk');
    const r = await getById(c.transactionId);
    expect(r.status).toBe(200);
    expect(r.body.referenceId).toBe(c.referenceId);
    expect(r.body.records.length).toBeGreaterThan(0);
    // Its records are found through it (their ids derive from its id).
    const recordId = String(r.body.records[0].recordId);
    const revoked = await op(`/records/${recordId}/revoke`, { referenceId: c.referenceId });
    expect(revoked.status).toBe(200);
    expect(await byTxnIndex(c.transactionId)).toEqual([]);

    // What AWS would bill (model): the same item with its txn key costs one unit more.
    const withKey = { ...item, [TXN_KEY]: txnKey(pub.a.app.appId, c.transactionId) };
    expect(putUnits(withKey, entitiesShape, true) - putUnits(item, entitiesShape, true)).toBe(1);
  });

  it('a transaction whose id does not carry the referenceId it is stored under keeps its txn key and is found through the index', async () => {
    const c = await capture();
    const rt = pub.f.p.rt;
    const other = c.referenceId.endsWith('0')
      ? c.referenceId.replace(/.$/, '1')
      : c.referenceId.replace(/.$/, '0');
    const transactionId = transactionUuid(Date.now(), other);
    const t = storedTransaction(pub.a.app.appId, transactionId, c.referenceId, true);
    const put = putTransaction(rt, t).Put!;
    expect(put.Item![TXN_KEY]).toBe(txnKey(t.appId, transactionId));
    await rt.dynamo.doc.send(new PutCommand({ TableName: put.TableName, Item: put.Item }));
    const r = await getById(transactionId);
    expect(r.status).toBe(200);
    expect(r.body.referenceId).toBe(c.referenceId);
    expect((await byTxnIndex(transactionId)).length).toBe(1);
    // An id of neither kind that names nothing is not found.
    expect((await getById(transactionUuid(Date.now(), c.referenceId))).status).toBe(404);
    expect((await getById(uuidv7())).status).toBe(404);
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
      expect(transactionIndexKeys(rt, appId, transactionId, 'SVC-REF-OLDTABLE')).toEqual({
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
