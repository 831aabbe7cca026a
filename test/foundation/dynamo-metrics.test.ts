import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Runtime } from '../../shared/runtime.js';
import { testRuntime } from '../helpers/stack.js';

/**
 * What the runtime's DynamoDB client reports about each request, against the real DynamoDB
 * Local of the test stack: its duration by operation, failed requests included.
 */
let rt: Runtime;

beforeAll(async () => {
  rt = await testRuntime('dynamo-metrics');
});
afterAll(async () => {
  await rt.close();
});

/** The histogram's observation count and sum (seconds) for one operation. */
async function observed(operation: string): Promise<{ count: number; sum: number }> {
  const m = await rt.registry.getSingleMetric('svc_dynamodb_request_duration_seconds')!.get();
  const values = m.values as {
    metricName?: string;
    labels: { operation?: string };
    value: number;
  }[];
  const pick = (name: string) =>
    values.find((v) => v.metricName === name && v.labels.operation === operation)?.value ?? 0;
  return {
    count: pick('svc_dynamodb_request_duration_seconds_count'),
    sum: pick('svc_dynamodb_request_duration_seconds_sum'),
  };
}

describe('svc_dynamodb_request_duration_seconds', () => {
  it('times every request by operation, a refused one too, as long as its caller waited', async () => {
    const table = rt.tables.entities;
    const key = { pk: `METRICS#${Date.now()}`, sk: 'ITEM' };
    const gets0 = await observed('GetItem');
    const puts0 = await observed('PutItem');

    const started = performance.now();
    await rt.dynamo.doc.send(new PutCommand({ TableName: table, Item: { ...key, n: 1 } }));
    for (let i = 0; i < 3; i++)
      await rt.dynamo.doc.send(
        new GetCommand({ TableName: table, Key: key, ConsistentRead: true }),
      );
    // Refused by its condition: the caller waited for it all the same.
    await expect(
      rt.dynamo.doc.send(
        new PutCommand({
          TableName: table,
          Item: { ...key, n: 2 },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      ),
    ).rejects.toThrow(/conditional/i);
    const waited = (performance.now() - started) / 1000;

    const gets = await observed('GetItem');
    const puts = await observed('PutItem');
    expect(gets.count - gets0.count).toBe(3);
    expect(puts.count - puts0.count).toBe(2);
    const timed = gets.sum - gets0.sum + (puts.sum - puts0.sum);
    expect(timed).toBeGreaterThan(0);
    expect(timed).toBeLessThanOrEqual(waited);
  });
});
