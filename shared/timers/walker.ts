import type { Runtime } from '../runtime.js';
import {
  advanceWatermark,
  bucketOf,
  bucketsToSweep,
  ensureWatermark,
  type DueFamily,
} from './due.js';

/**
 * What a reader does with one bucket of one shard: reads and handles its due entries, and
 * says whether the bucket held any (`true`), read empty (`false`), or that the pass must end
 * here (`'stop'`: no room for more work, or the reader is stopping).
 */
export type VisitBucket = (bucket: number, shard: number) => Promise<boolean | 'stop'>;

/**
 * The walk over a family of the due-index shared by its readers (the dispatcher's retry
 * sweeper and the timers worker): per shard, from its watermark to the current minute
 * (`bucketsToSweep`), each bucket handed to the reader's own claim step. A bucket two minutes
 * old that reads empty is done for good, so the shard's watermark moves past it, in memory and
 * in the index (the next copy to start begins there). Copies start at different shards so
 * they contend less for the same entries.
 */
export class BucketWalker {
  private readonly watermarks = new Map<number, number>();

  constructor(
    private readonly rt: Runtime,
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
      for (const b of bucketsToSweep(from, current)) {
        const held = await visit(b, shard);
        if (held === 'stop') {
          stop = true;
          break;
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
