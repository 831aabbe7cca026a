import {
  advanceWatermark,
  bucketOf,
  bucketsToSweep,
  ensureWatermark,
  type DueFamily,
  type TimerDeps,
} from '../storage/timers/due.js';

/** What the walk uses: the due-index's table (its watermarks); a Runtime is one. */
export type WalkerDeps = TimerDeps;

/**
 * What a reader does with one bucket of one shard: reads and handles its due entries, and
 * says whether the bucket held any (`true`), read empty (`false`), or that the pass must end
 * here (`'stop'`: no room for more work, or the reader is stopping).
 */
export type VisitBucket = (bucket: number, shard: number) => Promise<boolean | 'stop'>;

/** How often the last minute's bucket is read again once read empty after it ended. */
export const SETTLED_RECHECK_MS = 5_000;

/**
 * The walk over a family of the due-index shared by its readers (the dispatcher's retry
 * sweeper and the timers worker): per shard, from its watermark to the current minute
 * (`bucketsToSweep`), each bucket handed to the reader's own claim step. A bucket two minutes
 * old that reads empty is done for good, so the shard's watermark moves past it, in memory and
 * in the index (the next copy to start begins there). Copies start at different shards so
 * they contend less for the same entries.
 *
 * The last minute's bucket, once a pass read it empty after that minute ended, is read again
 * only every `SETTLED_RECHECK_MS` (not on every pass) until it is old enough to be passed: only
 * an entry whose write landed late (due at once, written across the minute's end, or from a
 * copy whose clock is behind) can still appear in it, and such an entry fires at most that much
 * later. The current minute is read on every pass, and so is every bucket that held entries at
 * its last read or is old enough to be passed. Idle, a shard then costs about one query a pass
 * instead of two.
 */
export class BucketWalker {
  private readonly watermarks = new Map<number, number>();
  /** Per shard: the last minute's bucket read empty after it ended, and when. */
  private readonly settled = new Map<number, { bucket: number; atMs: number }>();

  constructor(
    private readonly rt: WalkerDeps,
    private readonly o: { family: DueFamily; shards: number },
  ) {}

  /** Reads (or creates) every shard's watermark. */
  async init(nowMs: number): Promise<void> {
    for (let shard = 0; shard < this.o.shards; shard++)
      this.watermarks.set(shard, await ensureWatermark(this.rt, shard, nowMs, this.o.family));
  }

  /** One pass over every shard; ends early when `visit` answers `'stop'`. */
  async walk(nowMs: number, visit: VisitBucket): Promise<void> {
    const current = bucketOf(nowMs);
    const offset = Math.floor(Math.random() * this.o.shards);
    for (let i = 0; i < this.o.shards; i++) {
      const shard = (offset + i) % this.o.shards;
      const from = this.watermarks.get(shard) ?? current;
      let drained = from;
      let stop = false;
      const quiet = this.settled.get(shard);
      for (const b of bucketsToSweep(from, current)) {
        // Skipped, it is not passed either: only a bucket read empty in this pass is.
        if (
          b === current - 1 &&
          quiet?.bucket === b &&
          nowMs - quiet.atMs < SETTLED_RECHECK_MS &&
          nowMs >= quiet.atMs
        )
          continue;
        const held = await visit(b, shard);
        if (held === 'stop') {
          stop = true;
          break;
        }
        if (b === current - 1) {
          if (held) this.settled.delete(shard);
          else this.settled.set(shard, { bucket: b, atMs: nowMs });
        }
        if (!held && b === drained && b < current - 1) drained = b + 1;
      }
      // Only buckets read empty are passed, so moving on before a stop loses nothing.
      if (drained > from) {
        this.watermarks.set(shard, drained);
        await advanceWatermark(this.rt, shard, drained, this.o.family);
      }
      if (stop) return;
    }
  }
}
