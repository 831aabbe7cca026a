import { describe, expect, it } from 'vitest';
import { PartitionTracker } from './tracker.js';

describe('PartitionTracker', () => {
  it('commits only the prefix whose messages are all done, whatever order they finish in', () => {
    const t = new PartitionTracker(100, 1000);
    const [a, b, c] = [t.add(100), t.add(101), t.add(102)];
    expect(t.done(c)).toBe(false);
    expect(t.position).toBe(100);
    expect(t.done(b)).toBe(false);
    expect(t.position).toBe(100);
    expect(t.done(a)).toBe(true);
    expect(t.position).toBe(103);
    expect(t.outstanding).toBe(0);
  });

  it('follows gaps in the offsets (compacted or control records)', () => {
    const t = new PartitionTracker(10, 1000);
    const a = t.add(10);
    const b = t.add(14);
    t.done(a);
    expect(t.position).toBe(11);
    t.done(b);
    expect(t.position).toBe(15);
  });

  it('hands out at most maxUncommitted offsets past the committed position', async () => {
    const t = new PartitionTracker(0, 3);
    expect(t.room()).toBe(3);
    const es = [t.add(0), t.add(1), t.add(2)];
    expect(t.room()).toBe(0);
    for (const e of es) t.done(e);
    // Done is not committed: the bound moves only with a successful commit.
    expect(t.room()).toBe(0);
    let woke = false;
    const waiting = t.waitForRoom(10_000).then(() => (woke = true));
    await Promise.resolve();
    expect(woke).toBe(false);
    t.committedTo(t.position);
    await waiting;
    expect(woke).toBe(true);
    expect(t.room()).toBe(3);
  });

  it('waitForRoom returns after its timeout so the caller can heartbeat', async () => {
    const t = new PartitionTracker(0, 1);
    t.add(0);
    const t0 = Date.now();
    await t.waitForRoom(30);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(25);
    expect(t.room()).toBe(0);
  });

  it('calls uncertain only offsets a previous owner could have taken', () => {
    // Committed at 50, bound 100, the partition ended at 120 when assigned.
    const t = new PartitionTracker(50, 100, 120);
    expect(t.uncertain(50)).toBe(true);
    expect(t.uncertain(119)).toBe(true);
    expect(t.uncertain(120)).toBe(false); // appended after the assignment
    const far = new PartitionTracker(50, 100, 10_000);
    expect(far.uncertain(149)).toBe(true);
    expect(far.uncertain(150)).toBe(false); // beyond what any owner may take uncommitted
  });

  it('ignores a commit older than the one it knows', () => {
    const t = new PartitionTracker(0, 10);
    t.committedTo(5);
    t.committedTo(3);
    expect(t.committed).toBe(5);
  });
});
