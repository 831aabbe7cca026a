import {
  CreateTableCommand,
  DescribeTimeToLiveCommand,
  DeleteTableCommand,
} from '@aws-sdk/client-dynamodb';
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { applyTables } from '../../infra/definitions/apply.js';
import { createTableInput, tableDefs } from '../../infra/definitions/tables.js';
import { createDynamo } from '../../shared/storage/dynamo.js';
import { testConfig } from '../helpers/stack.js';

/**
 * Tables whose definition names a TTL attribute get DynamoDB TTL on it, also a table created
 * before the definition named one (the ledger before retention), on real DynamoDB Local. DynamoDB
 * Local accepts and reports the setting but never deletes expired items.
 */

const config = testConfig('infra-ttl');
const dynamo = createDynamo(config);
const prefix = `t_ttl_${randomBytes(3).toString('hex')}_`;
afterAll(async () => {
  await Promise.all(
    Object.values(tableDefs).map((d) =>
      dynamo.client
        .send(new DeleteTableCommand({ TableName: `${prefix}${d.name}` }))
        .catch(() => undefined),
    ),
  );
  dynamo.close();
});

const ttlOf = async (name: string) =>
  (await dynamo.client.send(new DescribeTimeToLiveCommand({ TableName: `${prefix}${name}` })))
    .TimeToLiveDescription;

describe('applyTables and TTL', () => {
  it('turns TTL on for an existing ledger table that has none, and for new tables', async () => {
    await dynamo.client.send(new CreateTableCommand(createTableInput(prefix, tableDefs.ledger)));
    expect((await ttlOf('ledger'))?.TimeToLiveStatus ?? 'DISABLED').toBe('DISABLED');
    await applyTables(dynamo.client, prefix);
    expect(await ttlOf('ledger')).toMatchObject({
      TimeToLiveStatus: 'ENABLED',
      AttributeName: 'retainUntil',
    });
    for (const d of Object.values(tableDefs)) {
      const ttl = await ttlOf(d.name);
      if ('ttlAttribute' in d)
        expect(ttl, d.name).toMatchObject({
          TimeToLiveStatus: 'ENABLED',
          AttributeName: d.ttlAttribute,
        });
      else expect(ttl?.TimeToLiveStatus ?? 'DISABLED', d.name).toBe('DISABLED');
    }
    // Applying again changes nothing and does not fail.
    await applyTables(dynamo.client, prefix);
    expect((await ttlOf('ledger'))?.AttributeName).toBe('retainUntil');
  });
});
