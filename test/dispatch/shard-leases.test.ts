import { DeleteCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Runtime } from '../../shared/runtime.js';
import { SKEW_MS, ShardLeases } from '../../workers/dispatcher/shard-leases.js';
import { testRuntime } from '../helpers/stack.js';

/**
 * The retry shards' leases against DynamoDB Local: copies share the shards, never hold one
 * together, and take over the leases of a copy that stopped or died.
 */
let rt: Runtime;
beforeAll(async () => {
  rt = await testRuntime('dispatch-shard-leases');
});
afterAll(async () => {
  await rt.close();
});
beforeEach(async () => {
  const r = await rt.dynamo.doc.send(
    new QueryCommand({
      TableName: rt.tables.timers,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': 'lease#retry' },
    }),
  );
  for (const i of r.Items ?? [])
    await rt.dynamo.doc.send(
      new DeleteCommand({ TableName: rt.tables.timers, Key: { pk: i.pk, sk: i.sk } }),
    );
});

const copy = (leaseMs = 30_000) => new ShardLeases(rt, { shards: 8, leaseMs, log: rt.log });
const disjoint = (a: number[], b: number[]) => a.every((s) => !b.includes(s));

describe('retry shard leases', () => {
  it('a lone copy holds every shard, until its lease ends less the skew margin', async () => {
    const a = copy();
    const now = Date.now();
    await a.renew(now);
    expect(a.shards(now)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(a.validUntil(3, now)).toBe(now + 30_000 - SKEW_MS);
    expect(a.validUntil(3, now + 30_000 - SKEW_MS)).toBe(0);
    expect(a.validUntil(8, now)).toBe(0);
  });

  it('two copies end up with half each, never the same shard', async () => {
    const a = copy();
    const b = copy();
    await a.renew();
    await b.renew(); // sees a's presence: wants 4, finds none free
    expect(b.shards()).toEqual([]);
    expect(a.shards()).toHaveLength(8);
    await a.renew(); // sees two copies: keeps 4, gives 4 back
    expect(a.shards()).toHaveLength(4);
    await b.renew(); // takes the 4 given back
    expect(b.shards()).toHaveLength(4);
    expect(disjoint(a.shards(), b.shards())).toBe(true);
    // Steady: more rounds change nothing.
    const before = [a.shards(), b.shards()];
    await a.renew();
    await b.renew();
    expect([a.shards(), b.shards()]).toEqual(before);
  });

  it('a stopping copy gives its leases back, and the other takes them at its next round', async () => {
    const a = copy();
    const b = copy();
    await a.renew();
    await b.renew();
    await a.renew();
    await b.renew();
    await a.stop();
    expect(a.shards()).toEqual([]);
    await b.renew();
    expect(b.shards()).toHaveLength(8);
  });

  it("a dead copy's leases are taken once they run out, not before", async () => {
    const a = copy(5_000);
    const b = copy(5_000);
    const t0 = Date.now();
    await a.renew(t0);
    // a dies (no stop). b, while a's leases last, takes nothing.
    await b.renew(t0 + 1_000);
    expect(b.shards(t0 + 1_000)).toEqual([]);
    // After they ran out (and a's presence with them), b holds everything.
    await b.renew(t0 + 5_001);
    expect(b.shards(t0 + 5_001)).toHaveLength(8);
    // a, come back to life, finds its leases gone at its next round.
    await a.renew(t0 + 5_002);
    expect(disjoint(a.shards(t0 + 5_002), b.shards(t0 + 5_002))).toBe(true);
    expect(a.shards(t0 + 5_002)).toEqual([]);
  });
});
