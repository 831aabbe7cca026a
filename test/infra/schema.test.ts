import { CreateTableCommand, DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { applyTables, applyTablesOnly } from '../../infra/definitions/apply.js';
import {
  checkSchema,
  migrate,
  SCHEMA_VERSION,
  storedVersion,
  type Migration,
} from '../../infra/definitions/schema.js';
import { createTableInput, tableDefs } from '../../infra/definitions/tables.js';
import { createDynamo } from '../../shared/storage/dynamo.js';
import { testConfig } from '../helpers/stack.js';

/**
 * The schema's start check and `npm run migrate` (infra/definitions/schema.ts) on real DynamoDB
 * Local: a process runs only on tables complete to their definitions whose data is in its
 * schema version; migrate completes the tables and moves the data forward step by step.
 */

const config = testConfig('infra-schema');
const dynamo = createDynamo(config);
afterAll(() => dynamo.close());
const newPrefix = (tag: string) => `t_${tag}_${randomBytes(3).toString('hex')}_`;
const quiet = () => undefined;
const setVersion = (prefix: string, version: number) =>
  dynamo.doc.send(new PutCommand({ TableName: `${prefix}meta`, Item: { id: 'schema', version } }));

describe('applyTables', () => {
  it('creates every table complete and records the schema version on new tables', async () => {
    const prefix = newPrefix('sc_new');
    await applyTables(dynamo.client, prefix);
    for (const def of Object.values(tableDefs)) {
      const t = (
        await dynamo.client.send(new DescribeTableCommand({ TableName: `${prefix}${def.name}` }))
      ).Table;
      const want = 'indexes' in def ? def.indexes.map((i) => i.name).sort() : [];
      expect([def.name, (t?.GlobalSecondaryIndexes ?? []).map((i) => i.IndexName).sort()]).toEqual([
        def.name,
        want,
      ]);
      expect([def.name, t?.StreamSpecification?.StreamEnabled === true]).toEqual([
        def.name,
        'stream' in def && def.stream === true,
      ]);
    }
    expect(await storedVersion(dynamo.doc, prefix)).toBe(SCHEMA_VERSION);
    // A second start finds everything in place and changes nothing.
    await applyTables(dynamo.client, prefix);
    expect(await storedVersion(dynamo.doc, prefix)).toBe(SCHEMA_VERSION);
  });

  it('refuses a table lacking its stream until npm run migrate turns it on', async () => {
    const prefix = newPrefix('sc_str');
    const { stream: _, ...entities } = tableDefs.entities;
    await dynamo.client.send(new CreateTableCommand(createTableInput(prefix, entities)));
    await expect(applyTables(dynamo.client, prefix)).rejects.toThrow(
      `table ${prefix}entities lacks its stream: run npm run migrate`,
    );
    await applyTablesOnly(dynamo.client, prefix);
    const logged: string[] = [];
    await migrate(dynamo.client, prefix, (m) => logged.push(m));
    expect(logged).toContain(`enabling the stream of ${prefix}entities`);
    const t = await dynamo.client.send(
      new DescribeTableCommand({ TableName: `${prefix}entities` }),
    );
    expect(t.Table?.StreamSpecification).toEqual({
      StreamEnabled: true,
      StreamViewType: 'NEW_IMAGE',
    });
    await applyTables(dynamo.client, prefix);
    expect(await storedVersion(dynamo.doc, prefix)).toBe(SCHEMA_VERSION);
  });

  it('refuses a table lacking an index, also while migrate is adding it', async () => {
    const prefix = newPrefix('sc_idx');
    const dropped = tableDefs.outbox.indexes[0].name;
    await dynamo.client.send(
      new CreateTableCommand(createTableInput(prefix, { ...tableDefs.outbox, indexes: [] })),
    );
    await expect(applyTables(dynamo.client, prefix)).rejects.toThrow(
      `table ${prefix}outbox lacks index ${dropped}: run npm run migrate`,
    );
    await applyTablesOnly(dynamo.client, prefix);
    // DynamoDB Local may keep a new index CREATING for minutes on a busy machine, as AWS does
    // while it backfills a large table: the test sees it added, not necessarily ACTIVE.
    const stop = new AbortController();
    const logged: string[] = [];
    const running = migrate(
      dynamo.client,
      prefix,
      (m) => logged.push(m),
      undefined,
      undefined,
      stop.signal,
    );
    running.catch(() => undefined);
    await expect
      .poll(() => logged, { timeout: 20_000 })
      .toContain(`adding index ${dropped} to ${prefix}outbox (waits until it is ACTIVE)`);
    const indexOf = async () =>
      (
        await dynamo.client.send(new DescribeTableCommand({ TableName: `${prefix}outbox` }))
      ).Table?.GlobalSecondaryIndexes?.find((i) => i.IndexName === dropped);
    // The log line comes just before the UpdateTable request.
    await expect
      .poll(async () => (await indexOf())?.IndexStatus, { timeout: 20_000 })
      .toMatch(/^(CREATING|ACTIVE)$/);
    const added = await indexOf();
    if (added?.IndexStatus !== 'ACTIVE')
      await expect(applyTables(dynamo.client, prefix)).rejects.toThrow(
        /lacks index \w+ \(CREATING\)/,
      );
    stop.abort();
    await running.catch(() => undefined);
  });
});

describe('schema versions', () => {
  it('refuses data behind this build until a migration moves it, and data ahead of it', async () => {
    const prefix = newPrefix('sc_ver');
    await applyTables(dynamo.client, prefix);
    await setVersion(prefix, SCHEMA_VERSION - 1);
    await expect(checkSchema(dynamo.client, prefix)).rejects.toThrow(
      `schema version ${SCHEMA_VERSION - 1} and this build needs ${SCHEMA_VERSION}: run npm run migrate`,
    );
    // No step to the current version exists for it: migrate says so and moves nothing.
    await expect(migrate(dynamo.client, prefix, quiet)).rejects.toThrow(/no migration from/);
    expect(await storedVersion(dynamo.doc, prefix)).toBe(SCHEMA_VERSION - 1);

    // A build one version ahead, with the step that rewrites the data to it.
    await setVersion(prefix, SCHEMA_VERSION);
    const key = { pk: 'APP#sc', sk: 'APP' };
    await dynamo.doc.send(
      new PutCommand({ TableName: `${prefix}entities`, Item: { ...key, name: 'old' } }),
    );
    let runs = 0;
    const step: Migration = {
      to: SCHEMA_VERSION + 1,
      description: 'renames name to title',
      run: async ({ doc, prefix: p }) => {
        runs++;
        const r = await doc.send(new GetCommand({ TableName: `${p}entities`, Key: key }));
        const { name, ...rest } = r.Item as Record<string, unknown>;
        await doc.send(
          new PutCommand({ TableName: `${p}entities`, Item: { ...rest, title: name ?? 'old' } }),
        );
      },
    };
    const first = await migrate(dynamo.client, prefix, quiet, [step], SCHEMA_VERSION + 1);
    expect(first).toEqual({ from: SCHEMA_VERSION, to: SCHEMA_VERSION + 1 });
    const item = await dynamo.doc.send(
      new GetCommand({ TableName: `${prefix}entities`, Key: key, ConsistentRead: true }),
    );
    expect(item.Item).toEqual({ ...key, title: 'old' });
    // Run again: nothing left to do.
    expect(await migrate(dynamo.client, prefix, quiet, [step], SCHEMA_VERSION + 1)).toEqual({
      from: SCHEMA_VERSION + 1,
      to: SCHEMA_VERSION + 1,
    });
    expect(runs).toBe(1);
    // This build does not run on data of the newer version.
    await expect(checkSchema(dynamo.client, prefix)).rejects.toThrow(/newer than this build/);
  });

  it('refuses tables that hold data without a version', async () => {
    const prefix = newPrefix('sc_unv');
    await applyTablesOnly(dynamo.client, prefix);
    await dynamo.doc.send(
      new PutCommand({ TableName: `${prefix}ledger`, Item: { pk: 'x', sk: 'y' } }),
    );
    await expect(checkSchema(dynamo.client, prefix)).rejects.toThrow(/no schema version/);
    expect(await storedVersion(dynamo.doc, prefix)).toBeUndefined();
  });
});
