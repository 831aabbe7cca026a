/**
 * The soak's memory rule. Samples are the process's RSS and V8 heap in use, read from its
 * /metrics every 10 s from the start of the load to its end.
 *
 * - RSS: the last sample's RSS may be at most 1.25 × the RSS at the reference point, minute 5
 *   of the load (a sixth of a shorter run), when the process has warmed up.
 * - Heap: the second half of the load is cut into one-minute windows (at least three); each
 *   window's lowest heap is what survived the last full collections in it. The median slope
 *   between every two of those low-water marks (Theil–Sen), over the half, may rise by at most
 *   max(5 MiB, 10 % of their mean). A leak raises every low-water mark and fails; the sawtooth
 *   between collections only moves the peaks, and a window without a full collection (a high
 *   low-water mark) changes a few of the pairs, not their median.
 */

export interface MemorySample {
  /** Milliseconds since the start of the load. */
  atMs: number;
  rssBytes: number;
  heapBytes: number;
}

export interface SoakMemory {
  /** The reference point (minute 5, or a sixth of a shorter load) and the load's end. */
  reference: MemorySample;
  end: MemorySample;
  rssLimitBytes: number;
  /** The second half's one-minute windows with a heap reading: start and lowest heap. */
  lowWater: { fromMs: number; heapBytes: number }[];
  /** The low-water marks' rise over the second half (median slope × its span), and its limit. */
  lowWaterRiseBytes: number;
  lowWaterLimitBytes: number;
  /** Every sample: [seconds into the load, RSS, heap in use]. */
  series: [number, number, number][];
}

const MiB = 1024 * 1024;

export function judgeMemory(
  samples: MemorySample[],
  loadMs: number,
): { memory?: SoakMemory; failures: string[] } {
  const withRss = samples.filter((s) => Number.isFinite(s.rssBytes));
  const refMs = Math.min(5 * 60_000, loadMs / 6);
  const reference = withRss.find((s) => s.atMs >= refMs);
  const end = withRss.at(-1);
  const half = samples.filter((s) => s.atMs >= loadMs / 2 && Number.isFinite(s.heapBytes));
  const windowCount = Math.max(3, Math.floor(loadMs / 2 / 60_000));
  const windowMs = loadMs / 2 / windowCount;
  const lowWater: SoakMemory['lowWater'] = [];
  for (let i = 0; i < windowCount; i++) {
    const fromMs = loadMs / 2 + i * windowMs;
    const inWindow = half.filter((s) => s.atMs >= fromMs && s.atMs < fromMs + windowMs);
    if (inWindow.length > 0)
      lowWater.push({ fromMs, heapBytes: Math.min(...inWindow.map((s) => s.heapBytes)) });
  }
  // A window without a heap reading (the process left /metrics unanswered) is left out; the
  // slope needs three at least.
  if (!reference || !end || end.atMs < loadMs - 30_000 || lowWater.length < 3)
    return {
      failures: [
        `memory not read: RSS in ${withRss.length} of ${samples.length} samples, the heap in ${lowWater.length} of ${windowCount} windows of the last half`,
      ],
    };

  const mean = lowWater.reduce((a, w) => a + w.heapBytes, 0) / lowWater.length;
  const slopes = lowWater
    .flatMap((p, i) =>
      lowWater.slice(i + 1).map((q) => (q.heapBytes - p.heapBytes) / (q.fromMs - p.fromMs)),
    )
    .sort((a, b) => a - b);
  const mid = slopes.length / 2;
  const slope =
    slopes.length % 2 ? slopes[Math.floor(mid)]! : (slopes[mid - 1]! + slopes[mid]!) / 2;
  const lowWaterRiseBytes = slope * (loadMs / 2);
  const lowWaterLimitBytes = Math.max(5 * MiB, 0.1 * mean);
  const rssLimitBytes = 1.25 * reference.rssBytes;
  const failures: string[] = [];
  if (end.rssBytes > rssLimitBytes)
    failures.push(
      `RSS grew from ${mib(reference.rssBytes)} at ${min(reference.atMs)} to ${mib(end.rssBytes)} at the end (limit ${mib(rssLimitBytes)})`,
    );
  if (lowWaterRiseBytes > lowWaterLimitBytes)
    failures.push(
      `the heap's low-water mark rose ${mib(lowWaterRiseBytes)} over the last half (limit ${mib(lowWaterLimitBytes)}): ${lowWater.map((w) => mib(w.heapBytes)).join(', ')}`,
    );
  return {
    memory: {
      reference,
      end,
      rssLimitBytes,
      lowWater,
      lowWaterRiseBytes,
      lowWaterLimitBytes,
      series: samples.map((x) => [Math.round(x.atMs / 1000), x.rssBytes, x.heapBytes]),
    },
    failures,
  };
}

export const mib = (b: number) => `${(b / MiB).toFixed(0)} MiB`;
const min = (ms: number) => `minute ${(ms / 60_000).toFixed(1)}`;
