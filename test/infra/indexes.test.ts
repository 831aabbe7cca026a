import { CreateTableCommand, DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { applyTables } from '../../infra/definitions/apply.js';
import { createTableInput, tableDefs } from '../../infra/definitions/tables.js';
import { createDynamo } from '../../shared/storage/dynamo.js';
import { testConfig } from '../helpers/stack.js';

/**
 * A table created before its definition gained an index (the ledger's `pages`, the carriers'
 * index) gets the index at the next start, on real DynamoDB Local; nothing else about it changes.
 */

const config = testConfig('infra-indexes');
const dynamo = createDynamo(config);
afterAll(() => dynamo.close());

describe('applyTables', () => {
  it('adds an index missing from an existing table', async () => {
    const prefix = `t_idx_${randomBytes(3).toString('hex')}_`;
    const old = {
      ...tableDefs.ledger,
      indexes: tableDefs.ledger.indexes.filter((ix) => ix.name !== 'pages'),
    };
    await dynamo.client.send(new CreateTableCommand(createTableInput(prefix, old)));
    const indexes = async () =>
      (
        await dynamo.client.send(new DescribeTableCommand({ TableName: `${prefix}ledger` }))
      ).Table?.GlobalSecondaryIndexes?.map((i) => [
        i.IndexName,
        i.Projection?.ProjectionType,
      ]).sort();
    expect(await indexes()).toEqual([
      ['due', 'INCLUDE'],
      ['gsi1', 'INCLUDE'],
      ['gsi2', 'INCLUDE'],
      ['gsi3', 'KEYS_ONLY'],
    ]);
    await applyTables(dynamo.client, prefix);
    const all = [
      ['due', 'INCLUDE'],
      ['gsi1', 'INCLUDE'],
      ['gsi2', 'INCLUDE'],
      ['gsi3', 'KEYS_ONLY'],
      ['pages', 'KEYS_ONLY'],
    ];
    expect(await indexes()).toEqual(all);
    // Applying again changes nothing (one index was missing; a call adds one).
    await applyTables(dynamo.client, prefix);
    expect(await indexes()).toEqual(all);
  });

  it('turns on the stream of entities (new images) where it is off, and leaves it on', async () => {
    const prefix = `t_str_${randomBytes(3).toString('hex')}_`;
    const { stream: _, ...before } = tableDefs.entities;
    await dynamo.client.send(new CreateTableCommand(createTableInput(prefix, before)));
    const spec = async () =>
      (await dynamo.client.send(new DescribeTableCommand({ TableName: `${prefix}entities` }))).Table
        ?.StreamSpecification;
    expect(await spec()).toBeUndefined();
    await applyTables(dynamo.client, prefix);
    expect(await spec()).toEqual({ StreamEnabled: true, StreamViewType: 'NEW_IMAGE' });
    await applyTables(dynamo.client, prefix);
    expect(await spec()).toEqual({ StreamEnabled: true, StreamViewType: 'NEW_IMAGE' });
    // A table created now has it from the start; one without `stream` has none.
    const fresh = `t_str_${randomBytes(3).toString('hex')}_`;
    await applyTables(dynamo.client, fresh);
    for (const [name, def] of Object.entries(tableDefs)) {
      const t = await dynamo.client.send(
        new DescribeTableCommand({ TableName: `${fresh}${def.name}` }),
      );
      expect([name, t.Table?.StreamSpecification?.StreamEnabled === true]).toEqual([
        name,
        'stream' in def && def.stream === true,
      ]);
    }
  });

  it('creates the sparse due index of entities with only the attributes named', async () => {
    const prefix = `t_due_${randomBytes(3).toString('hex')}_`;
    await applyTables(dynamo.client, prefix);
    const t = await dynamo.client.send(
      new DescribeTableCommand({ TableName: `${prefix}entities` }),
    );
    const due = t.Table?.GlobalSecondaryIndexes?.find((i) => i.IndexName === 'due');
    expect(due?.KeySchema).toEqual([
      { AttributeName: 'duepk', KeyType: 'HASH' },
      { AttributeName: 'duesk', KeyType: 'RANGE' },
    ]);
    expect(due?.Projection?.ProjectionType).toBe('INCLUDE');
    expect([...(due?.Projection?.NonKeyAttributes ?? [])].sort()).toEqual([
      'appId',
      'duekind',
      'referenceId',
      'transactionId',
    ]);
  });
});
