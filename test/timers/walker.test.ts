import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Runtime } from '../../shared/runtime.js';
import { bucketOf } from '../../shared/storage/timers/due.js';
import { BucketWalker, SETTLED_RECHECK_MS } from '../../shared/timers/walker.js';
import { testRuntime } from '../helpers/stack.js';

/**
 * The bucket walk shared by the dispatcher's retry sweeper and the timers worker, on DynamoDB
 * Local: which buckets it hands to the claim step, and when a shard's watermark (in memory and
 * in the index) moves on.
 */

let rt: Runtime;
const MINUTE = 60_000;

beforeAll(async () => {
  rt = await testRuntime('timers-walker');
});
afterAll(() => {
  rt?.dynamo.close();
});

/** The stored watermark of a shard (the timers table keeps one item per family and shard). */
async function stored(family: 'sla' | 'duty', shard: number): Promise<number | undefined> {
  const r = await rt.dynamo.doc.send(
    new GetCommand({
      TableName: rt.tables.timers,
      Key: { pk: `${family}#watermark`, sk: String(shard) },
      ConsistentRead: true,
    }),
  );
  return r.Item?.bucket as number | undefined;
}

describe('BucketWalker', () => {
  it('hands every bucket from the watermark to now to the claim step, shard by shard, and moves past old empty ones only', async () => {
    const start = Date.now();
    const walker = new BucketWalker(rt, { family: 'sla', shards: 2 });
    await walker.init(start); // watermark: two minutes before `start`
    const first = bucketOf(start) - 2;
    expect(await stored('sla', 0)).toBe(first);

    // Five minutes later, shard 0's second bucket holds entries; everything else is empty.
    const later = start + 5 * MINUTE;
    const now = bucketOf(later);
    const seen: [number, number][] = [];
    await walker.walk(later, async (b, shard) => {
      seen.push([shard, b]);
      return shard === 0 && b === first + 1;
    });
    const buckets = Array.from({ length: now - first + 1 }, (_, i) => first + i);
    for (const shard of [0, 1])
      expect(seen.filter(([s]) => s === shard).map(([, b]) => b)).toEqual(buckets);
    // Shard 0 stops before the bucket that held entries; shard 1 moves up to a minute ago.
    expect(await stored('sla', 0)).toBe(first + 1);
    expect(await stored('sla', 1)).toBe(now - 1);

    // The next pass starts there. The last minute's bucket, read empty after it ended, waits
    // for its recheck; everything old enough to be passed is read again.
    const again: [number, number][] = [];
    await walker.walk(later, async (b, shard) => {
      again.push([shard, b]);
      return false;
    });
    expect(again.filter(([s]) => s === 1).map(([, b]) => b)).toEqual([now]);
    expect(again.filter(([s]) => s === 0).map(([, b]) => b)).toEqual(
      buckets.slice(1).filter((b) => b !== now - 1),
    );
    expect(await stored('sla', 0)).toBe(now - 1);
  });

  it('reads the last minute again every SETTLED_RECHECK_MS once read empty, and on every pass while it holds entries', async () => {
    const start = Date.now();
    const walker = new BucketWalker(rt, { family: 'duty', shards: 1 }); // a family no other test walks;
    await walker.init(start);
    // Ten seconds into a minute, so that the passes below stay in it.
    const t0 = (bucketOf(start) + 3) * MINUTE + 10_000;
    const now = bucketOf(t0);
    const pass = async (at: number, holds: (b: number) => boolean = () => false) => {
      const seen: number[] = [];
      await walker.walk(at, async (b) => {
        seen.push(b);
        return holds(b);
      });
      return seen;
    };
    // The first pass reads everything from the watermark and passes the old empty buckets.
    expect(await pass(t0)).toEqual([now - 5, now - 4, now - 3, now - 2, now - 1, now]);
    expect(await stored('duty', 0)).toBe(now - 1);
    // Within the recheck time only the current minute is read…
    expect(await pass(t0 + 1_000)).toEqual([now]);
    expect(await pass(t0 + SETTLED_RECHECK_MS - 1)).toEqual([now]);
    // …then the last minute again, where a late entry has landed: read on every pass while it
    // holds entries, the recheck time counting again once it reads empty.
    const late = (b: number) => b === now - 1;
    expect(await pass(t0 + SETTLED_RECHECK_MS, late)).toEqual([now - 1, now]);
    expect(await pass(t0 + SETTLED_RECHECK_MS + 1_000, late)).toEqual([now - 1, now]);
    expect(await pass(t0 + SETTLED_RECHECK_MS + 2_000)).toEqual([now - 1, now]);
    expect(await pass(t0 + SETTLED_RECHECK_MS + 3_000)).toEqual([now]);
    // A minute later the bucket is old enough to be passed: read at once, and passed.
    expect(await pass(t0 + MINUTE)).toEqual([now - 1, now, now + 1]);
    expect(await stored('duty', 0)).toBe(now);
  });

  it("ends the pass at 'stop', keeping what it had passed", async () => {
    const start = Date.now();
    const walker = new BucketWalker(rt, { family: 'sla', shards: 3 });
    await walker.init(start);
    let calls = 0;
    await walker.walk(start + 10 * MINUTE, async () => (++calls === 3 ? 'stop' : false));
    // One shard visited: two empty buckets, then the stop; the other shards are not read.
    expect(calls).toBe(3);
  });
});
