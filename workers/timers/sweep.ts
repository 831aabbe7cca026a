import { randomUUID } from 'node:crypto';
import {
  deleteDue,
  leaseDue,
  listDue,
  releaseDue,
  type DueFamily,
  type TimerEntry,
} from '../../shared/storage/timers/due.js';
import {
  deleteDerivedDue,
  leaseDerivedDue,
  listDerivedDue,
  releaseDerivedDue,
} from '../../shared/storage/timers/derived.js';
import { BucketWalker } from '../../shared/timers/walker.js';
import type { Logger } from '../../shared/logger.js';
import type { Runtime } from '../../shared/runtime.js';

/** Entries read per query, and fired at once. */
const BATCH = 100;
const CONCURRENCY = 16;
/** Queries per bucket per sweep: a huge backlog is worked off over several sweeps. */
const MAX_ROUNDS = 20;

export type FireOutcome = 'done' | 'failed' | 'taken';

/** What one sweep did: entries fired per kind, failed, and left to another copy. */
export interface SweepStats {
  done: Record<string, number>;
  failed: Record<string, number>;
  taken: number;
}

/**
 * Sweeps one family of the due-index (shared/storage/timers/due.ts) with the shared bucket walk
 * (shared/timers/walker.ts), reading only due entries. An entry is leased (conditional update, one
 * copy wins), its action run, then deleted; if the action fails the lease is given back and
 * the next sweep tries again, and if this copy dies the lease runs out and another copy
 * fires it. Actions are idempotent, so the rare double firing after a lease ran out is safe.
 * Besides the timers table, a family may have entries derived from the items they belong to
 * (`derivedFrom`: tables whose `due` index holds them, shared/storage/timers/derived.ts): each bucket is
 * read from every source, and an entry is leased, fired and removed where it came from (`from`).
 */
export class FamilySweeper {
  private readonly walker: BucketWalker;
  private loop: NodeJS.Timeout | undefined;
  private running: Promise<unknown> = Promise.resolve();
  private stopped = false;

  constructor(
    private readonly rt: Runtime,
    private readonly o: {
      family: DueFamily;
      shards: number;
      intervalMs: number;
      leaseMs: number;
      now: () => number;
      log: Logger;
      /** Runs the entry's action; throws to have it retried. */
      act: (e: TimerEntry, nowMs: number) => Promise<void>;
      /** Called after each sweep that did something (for logs and metrics). */
      onSweep?: (s: SweepStats) => void;
      /** Tables whose `due` index also holds entries of this family (derived.ts). */
      derivedFrom?: readonly string[];
    },
  ) {
    this.walker = new BucketWalker(rt, { family: o.family, shards: o.shards });
  }

  /** Reads (or creates) every shard's watermark: enough to call `sweep()` by hand. */
  async init(): Promise<void> {
    await this.walker.init(this.o.now());
  }

  /** `init`, then a sweep every `intervalMs` until `stop`. */
  async start(): Promise<void> {
    await this.init();
    const tick = () => {
      this.running = this.sweep()
        .catch((err: unknown) =>
          this.o.log.warn({ err, family: this.o.family }, 'timers sweep failed'),
        )
        .finally(() => {
          if (!this.stopped) this.loop = setTimeout(tick, this.o.intervalMs);
        });
    };
    tick();
  }

  /** One pass over every shard, from its watermark to the current minute. */
  async sweep(): Promise<SweepStats> {
    const nowMs = this.o.now();
    const stats: SweepStats = { done: {}, failed: {}, taken: 0 };
    await this.walker.walk(nowMs, (b, shard) =>
      this.stopped ? Promise.resolve('stop' as const) : this.drainBucket(b, shard, nowMs, stats),
    );
    if (Object.keys(stats.done).length + Object.keys(stats.failed).length > 0)
      this.o.onSweep?.(stats);
    return stats;
  }

  /**
   * Fires a bucket's due entries, from the timers table and from each derived index; returns
   * whether it held any. A derived index that cannot be read (e.g. still being built after it
   * was added) leaves the bucket held, so the watermark waits for it, and the other sources go on.
   */
  private async drainBucket(b: number, shard: number, nowMs: number, stats: SweepStats) {
    const { family } = this.o;
    let seen = await this.drainSource(
      () => listDue<TimerEntry>(this.rt, b, shard, nowMs, BATCH, family),
      nowMs,
      stats,
    );
    for (const table of this.o.derivedFrom ?? []) {
      try {
        const held = await this.drainSource(
          () => listDerivedDue(this.rt, table, b, shard, nowMs, BATCH, family),
          nowMs,
          stats,
        );
        seen ||= held;
      } catch (err) {
        this.o.log.warn({ err, family, table, bucket: b, shard }, 'derived due index not read');
        seen = true;
      }
    }
    return seen;
  }

  /** Fires the due entries one source lists for a bucket; returns whether it listed any. */
  private async drainSource(
    list: () => Promise<TimerEntry[]>,
    nowMs: number,
    stats: SweepStats,
  ): Promise<boolean> {
    let seen = false;
    for (let round = 0; round < MAX_ROUNDS && !this.stopped; round++) {
      const entries = await list();
      if (entries.length === 0) break;
      seen = true;
      let fired = 0;
      for (let i = 0; i < entries.length; i += CONCURRENCY) {
        const outcomes = await Promise.all(
          entries.slice(i, i + CONCURRENCY).map((e) => this.fire(e, nowMs)),
        );
        outcomes.forEach((out, j) => {
          const kind = entries[i + j]!.kind;
          if (out === 'taken') stats.taken++;
          else stats[out][kind] = (stats[out][kind] ?? 0) + 1;
          if (out === 'done') fired++;
        });
      }
      // Only leased or failing entries left (or a short page): nothing more to gain now.
      if (fired === 0 || entries.length < BATCH) break;
    }
    return seen;
  }

  /** Leases one entry, runs its action, deletes it; gives the lease back when the action fails. */
  async fire(e: TimerEntry, nowMs = this.o.now()): Promise<FireOutcome> {
    const token = randomUUID();
    const { rt } = this;
    const from = e.from;
    const leased = from
      ? await leaseDerivedDue(rt, { sk: e.sk, from }, nowMs, this.o.leaseMs, token)
      : await leaseDue(rt, e, nowMs, this.o.leaseMs, token);
    if (!leased) return 'taken';
    try {
      await this.o.act(e, nowMs);
    } catch (err) {
      this.o.log.warn({ err, kind: e.kind, sk: e.sk }, 'timer action failed; it will be retried');
      await (
        from ? releaseDerivedDue(rt, { sk: e.sk, from }, token) : releaseDue(rt, e, token)
      ).catch(() => undefined);
      return 'failed';
    }
    // Left behind, the entry fires again once the lease runs out: harmless, actions are idempotent.
    await (from ? deleteDerivedDue(rt, { sk: e.sk, from }) : deleteDue(rt, e)).catch(
      (err: unknown) => this.o.log.warn({ err, sk: e.sk }, 'fired timer not deleted'),
    );
    return 'done';
  }

  /** Stops sweeping; a sweep in progress finishes its current entries. Idempotent. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.loop) clearTimeout(this.loop);
    await this.running;
  }
}
