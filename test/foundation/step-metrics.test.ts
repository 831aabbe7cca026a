import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Runtime } from '../../shared/runtime.js';
import { testRuntime } from '../helpers/stack.js';

/**
 * How long the steps of a write take, as the runtime reports them, against the real DynamoDB
 * Local and Kafka of the test stack: each DynamoDB request by operation (failed requests
 * included), and each outbox commit's store and publish steps.
 */
let rt: Runtime;

beforeAll(async () => {
  rt = await testRuntime('dynamo-metrics');
});
afterAll(async () => {
  await rt.close();
});

/** A histogram's observation count and sum (seconds) for one value of its label. */
async function observed(
  operation: string,
  metric = 'svc_dynamodb_request_duration_seconds',
  label: 'operation' | 'step' = 'operation',
): Promise<{ count: number; sum: number }> {
  const m = await rt.registry.getSingleMetric(metric)!.get();
  const values = m.values as {
    metricName?: string;
    labels: Record<string, string | number | undefined>;
    value: number;
  }[];
  const pick = (name: string) =>
    values.find((v) => v.metricName === name && v.labels[label] === operation)?.value ?? 0;
  return { count: pick(`${metric}_count`), sum: pick(`${metric}_sum`) };
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

describe('svc_outbox_commit_seconds', () => {
  it('times a commit in two steps, the transaction and the publish, within what the caller waited', async () => {
    const store0 = await observed('store', 'svc_outbox_commit_seconds', 'step');
    const publish0 = await observed('publish', 'svc_outbox_commit_seconds', 'step');
    const id = `evt_metrics_${Date.now()}`;
    const started = performance.now();
    const { published } = await rt.outbox.commit(
      [
        {
          Put: {
            TableName: rt.tables.entities,
            Item: { pk: `change#${id}`, sk: 'v' },
            ConditionExpression: 'attribute_not_exists(pk)',
          },
        },
      ],
      [
        {
          id,
          topic: rt.topics.consentEvents,
          key: 'metrics',
          value: JSON.stringify({ id }),
          createdAtMs: Date.now(),
        },
      ],
    );
    const waited = (performance.now() - started) / 1000;
    expect(published).toBe(true);

    const store = await observed('store', 'svc_outbox_commit_seconds', 'step');
    const publish = await observed('publish', 'svc_outbox_commit_seconds', 'step');
    expect(store.count - store0.count).toBe(1);
    expect(publish.count - publish0.count).toBe(1);
    const steps = store.sum - store0.sum + (publish.sum - publish0.sum);
    expect(store.sum - store0.sum).toBeGreaterThan(0);
    expect(publish.sum - publish0.sum).toBeGreaterThan(0);
    expect(steps).toBeLessThanOrEqual(waited);
  });
});
