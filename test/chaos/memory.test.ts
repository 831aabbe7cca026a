import { describe, expect, it } from 'vitest';
import { judgeMemory, type MemorySample } from './memory.js';

const MiB = 1024 * 1024;

/** A sample every 10 s over `loadMs`: a GC sawtooth (0–40 MiB above the floor) on `floor(t)`. */
function series(
  loadMs: number,
  floor: (ms: number) => number,
  rss: (ms: number) => number,
): MemorySample[] {
  const out: MemorySample[] = [];
  for (let t = 10_000, i = 0; t <= loadMs; t += 10_000, i++)
    out.push({ atMs: t, heapBytes: floor(t) + ((i * 7) % 5) * 10 * MiB, rssBytes: rss(t) });
  return out;
}

const flatRss = () => 250 * MiB;
const thirty = 30 * 60_000;

describe('the soak memory rule', () => {
  it('passes a flat heap whose collections leave it 0–40 MiB above its floor', () => {
    const r = judgeMemory(
      series(thirty, () => 80 * MiB, flatRss),
      thirty,
    );
    expect(r.failures).toEqual([]);
    expect(r.memory?.reference.atMs).toBe(5 * 60_000);
    expect(r.memory?.lowWater).toHaveLength(15);
  });

  it('fails a heap whose floor rises 1 MiB a minute', () => {
    const r = judgeMemory(
      series(thirty, (t) => 80 * MiB + (t / 60_000) * MiB, flatRss),
      thirty,
    );
    expect(r.failures).toHaveLength(1);
    expect(r.failures[0]).toMatch(/low-water mark rose 15 MiB/);
  });

  it('passes a last window whose floor is high, as one without a full collection', () => {
    const s = series(thirty, () => 80 * MiB, flatRss).map((x) =>
      x.atMs >= 29 * 60_000 ? { ...x, heapBytes: x.heapBytes + 30 * MiB } : x,
    );
    expect(judgeMemory(s, thirty).failures).toEqual([]);
  });

  it('fails an RSS at the end above 1.25 × its value at minute 5', () => {
    const r = judgeMemory(
      series(
        thirty,
        () => 80 * MiB,
        (t) => 200 * MiB + (t / 60_000) * 3 * MiB,
      ),
      thirty,
    );
    expect(r.failures).toEqual([
      'RSS grew from 215 MiB at minute 5.0 to 290 MiB at the end (limit 269 MiB)',
    ]);
  });

  it('takes a sixth of a shorter load as its reference and three windows at least', () => {
    const r = judgeMemory(
      series(240_000, () => 80 * MiB, flatRss),
      240_000,
    );
    expect(r.failures).toEqual([]);
    expect(r.memory?.reference.atMs).toBe(40_000);
    expect(r.memory?.lowWater).toHaveLength(3);
  });

  it('judges the windows with a heap reading, and fails with fewer than three', () => {
    const sparse = series(thirty, () => 80 * MiB, flatRss).map((x) =>
      x.atMs % (5 * 60_000) === 0 ? x : { ...x, heapBytes: NaN },
    );
    const r = judgeMemory(sparse, thirty);
    expect(r.failures).toEqual([]);
    expect(r.memory?.lowWater).toHaveLength(3);
    const none = sparse.map((x) => (x.atMs < 25 * 60_000 ? x : { ...x, heapBytes: NaN }));
    expect(judgeMemory(none, thirty).failures[0]).toMatch(
      /memory not read: RSS in 180 of 180 samples, the heap in 2 of 15 windows/,
    );
  });
});
