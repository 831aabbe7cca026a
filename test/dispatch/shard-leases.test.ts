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

  it('two copies end up with half each, never the same shard, the extra ones taken once run out', async () => {
    const a = copy(5_000);
    const b = copy(5_000);
    const t0 = Date.now();
    await a.renew(t0);
    await b.renew(t0 + 10); // sees a's presence: wants 4, finds none free
    expect(b.shards(t0 + 10)).toEqual([]);
    expect(a.shards(t0 + 10)).toHaveLength(8);
    await a.renew(t0 + 100); // sees two copies: keeps and renews 4, stops using the others
    expect(a.shards(t0 + 100)).toHaveLength(4);
    // Those are still a's lease until they run out: an attempt a started on one may be running.
    await b.renew(t0 + 200);
    expect(b.shards(t0 + 200)).toEqual([]);
    await a.renew(t0 + 4_000); // renews its 4 (until t0 + 9 s)
    await b.renew(t0 + 5_001); // the other 4 ran out at t0 + 5 s: b takes them...
    expect(b.shards(t0 + 5_001)).toEqual([]);
    // ...but uses them only a grace period (a lease, here) after they ran out, so the records
    // of a's last attempts on them have landed.
    await a.renew(t0 + 8_000);
    await b.renew(t0 + 8_001);
    expect(b.shards(t0 + 9_999)).toEqual([]);
    expect(b.shards(t0 + 10_001)).toHaveLength(4);
    expect(a.shards(t0 + 10_001)).toHaveLength(4);
    expect(disjoint(a.shards(t0 + 10_001), b.shards(t0 + 10_001))).toBe(true);
    // Steady: more rounds change nothing.
    const before = [a.shards(t0 + 10_001), b.shards(t0 + 10_001)];
    await a.renew(t0 + 10_050);
    await b.renew(t0 + 10_060);
    expect([a.shards(t0 + 10_060), b.shards(t0 + 10_060)]).toEqual(before);
  });

  it('a stopping copy gives its leases back, and the other takes them at its next round', async () => {
    const a = copy(5_000);
    const b = copy(5_000);
    const t0 = Date.now();
    await a.renew(t0);
    await b.renew(t0 + 10);
    await a.renew(t0 + 20); // 4 kept, 4 leaving
    await a.stop(); // gives back both kinds
    expect(a.shards()).toEqual([]);
    await b.renew(t0 + 30);
    expect(b.shards(t0 + 30)).toHaveLength(8);
  });

  it("a dead copy's leases are taken once they run out, and used a grace period later", async () => {
    const a = copy(5_000);
    const b = copy(5_000);
    const t0 = Date.now();
    await a.renew(t0);
    // a dies (no stop). b, while a's leases last, takes nothing.
    await b.renew(t0 + 1_000);
    expect(b.shards(t0 + 1_000)).toEqual([]);
    // After they ran out (and a's presence with them), b holds everything, and uses it once
    // the grace period after their end has passed.
    await b.renew(t0 + 5_001);
    expect(b.shards(t0 + 5_001)).toEqual([]);
    await b.renew(t0 + 8_000);
    expect(b.shards(t0 + 10_001)).toHaveLength(8);
    // a, come back to life, finds its leases gone at its next round.
    await a.renew(t0 + 10_002);
    expect(a.shards(t0 + 10_002)).toEqual([]);
  });

  it('a lease that ran out longer than the grace period ago is used at once', async () => {
    const a = copy(5_000);
    const t0 = Date.now();
    await a.renew(t0);
    const b = copy(5_000);
    await b.renew(t0 + 12_000); // a's ran out at t0 + 5 s: 7 s ago, more than the grace
    expect(b.shards(t0 + 12_000)).toHaveLength(8);
  });
});
