import { randomUUID } from 'node:crypto';
import type { LeaseDeps } from '../../shared/storage/leases/gauge-lease.js';
import {
  putPresence,
  readRetryLeases,
  releasePresence,
  releaseShard,
  takeShard,
} from '../../shared/storage/leases/retry-leases.js';
import type { Logger } from '../../shared/logger.js';
import type { Runtime } from '../../shared/runtime.js';
import { DEADLINE_MARGIN_MS } from './attempt.js';

/**
 * Which shards of the retry due-index this worker copy owns. The owner of a shard makes its due
 * attempts without claiming each one (no write before an attempt: the attempt's record is
 * the only write), because no other copy sweeps that shard while the lease lasts. A copy that
 * dies holding leases loses nothing: they run out, another copy takes them, and whatever was
 * due (including an attempt cut short) is still due on its dispatch item.
 *
 * Each shard's lease and each live copy's presence are items of the `timers` table
 * (shared/storage/leases/retry-leases.ts). The copies share the shards: each aims at
 * `ceil(shards / live copies)`, and stops using and renewing what it holds beyond that, which
 * another copy takes once it has run out.
 *
 * A lease taken over from another copy is used only `graceMs` (by default `leaseMs`) after
 * that copy's lease ran out, so the records of its last attempts have landed (see
 * `usableFrom`); a lease given back by a copy that stopped is used at once, and one that ran
 * out longer ago than that too.
 *
 * Every `leaseMs / 3` a copy reads these items (one query) and writes its presence and each
 * lease it keeps or takes: a few writes a period, whatever the load. Leases are judged by each
 * copy's own clock; a copy stops making attempts `SKEW_MS` before its lease runs out (see
 * `validUntil`), so clocks that differ by less than that never let two copies attempt the same
 * entry. If they differ by more, or a copy is paused past its lease (SIGSTOP), an attempt can be
 * made twice: a duplicate webhook with the same `webhook-id`, never a second ledger record
 * (the record is conditional on the dispatch's attempt count).
 */

/** How much sooner than its lease's end a copy stops starting attempts on it. */
export const SKEW_MS = 2_000;

/**
 * The dispatcher's leases: 30 s, but never so short that a lease renewed
 * on time could end before an attempt found by the sweep after the renewal.
 */
export function retryShardLeases(rt: Runtime, log: Logger): ShardLeases {
  const c = rt.config;
  return new ShardLeases(rt, {
    shards: c.TIMER_SHARDS,
    leaseMs: Math.max(30_000, 2 * (c.WEBHOOK_TIMEOUT_MS + DEADLINE_MARGIN_MS) + SKEW_MS),
    log,
  });
}

export class ShardLeases {
  readonly owner = randomUUID();
  /** Shard → when its lease ends (as written by this copy, on its clock). */
  private readonly held = new Map<number, number>();
  /**
   * Shards this copy holds beyond its share, left to run out rather than given back: an
   * attempt this copy started on one ends before its lease does (the attempter's deadline),
   * so the next holder never finds an attempt of it still running. Not renewed, not used.
   */
  private readonly leaving = new Set<number>();
  /**
   * Shard → from when this copy uses it: a lease taken over from another copy whose lease ran
   * out lately is used only `graceMs` after that. Its attempts ended before its lease did, but
   * their records may still be landing (retried while the store is slow); an entry read before
   * its record landed would be attempted again.
   */
  private readonly usableFrom = new Map<number, number>();
  private loop: NodeJS.Timeout | undefined;
  private running: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(
    private readonly db: LeaseDeps,
    private readonly o: { shards: number; leaseMs: number; log: Logger; graceMs?: number },
  ) {}

  /** Takes this copy's share of the shards, then keeps it every `leaseMs / 3`. */
  async start(): Promise<void> {
    try {
      await this.renew();
    } catch (err) {
      this.o.log.warn({ err }, 'retry shard leases not taken; trying again');
    }
    const tick = () => {
      this.running = this.renew()
        .catch((err: unknown) => this.o.log.warn({ err }, 'retry shard leases not renewed'))
        .finally(() => {
          if (!this.stopped) this.loop = setTimeout(tick, Math.ceil(this.o.leaseMs / 3));
        });
    };
    this.loop = setTimeout(tick, Math.ceil(this.o.leaseMs / 3));
  }

  /**
   * Until when (epoch ms, this copy's clock) this copy may start work on `shard` alone; 0 when
   * it does not hold the shard. An attempt must end before it (the attempter checks).
   */
  validUntil(shard: number, nowMs = Date.now()): number {
    if ((this.usableFrom.get(shard) ?? 0) > nowMs) return 0;
    const until = (this.held.get(shard) ?? 0) - SKEW_MS;
    return until > nowMs ? until : 0;
  }

  /** The shards this copy holds now. */
  shards(nowMs = Date.now()): number[] {
    return [...this.held.keys()].filter((s) => this.validUntil(s, nowMs) > 0).sort((a, b) => a - b);
  }

  /** One round: presence, then the leases kept, given back and taken. */
  async renew(nowMs = Date.now()): Promise<void> {
    if (this.stopped) return;
    const { db } = this;
    const untilMs = nowMs + this.o.leaseMs;
    await putPresence(db, this.owner, untilMs);
    const stored = await readRetryLeases(db);
    // Presences of copies gone for ten lease periods (killed, never stopped) are cleared.
    for (const c of stored.copies)
      if (c.leaseUntil < nowMs - 10 * this.o.leaseMs) await releasePresence(db, c.owner);
    const copies = stored.copies.filter((c) => c.leaseUntil >= nowMs).length;
    const fair = Math.ceil(this.o.shards / Math.max(1, copies));
    const lease = stored.shards;
    // The leases this copy holds, by the store's account: the rest are no longer its own.
    const mine: number[] = [];
    const free: number[] = [];
    for (let n = 0; n < this.o.shards; n++) {
      const l = lease.get(n);
      const held = l?.owner === this.owner && l.leaseUntil >= nowMs;
      if (held && !this.leaving.has(n)) mine.push(n);
      else if (!held) {
        this.leaving.delete(n); // run out (or taken): done leaving
        if (!l || l.leaseUntil < nowMs) free.push(n);
      }
    }
    for (const n of this.held.keys()) if (!mine.includes(n)) this.held.delete(n);
    const keep = mine.slice(0, fair);
    for (const n of mine.slice(fair)) {
      this.held.delete(n);
      this.leaving.add(n);
    }
    // Those leaving count against this copy's share until they have run out.
    const share = Math.max(0, fair - this.leaving.size);
    // Start at a random shard, so copies starting together take different ones.
    const offset = Math.floor(Math.random() * Math.max(1, free.length));
    const take = [...free.slice(offset), ...free.slice(0, offset)].slice(
      0,
      Math.max(0, share - keep.length),
    );
    for (const n of [...keep, ...take]) {
      if (this.stopped) return;
      if (await takeShard(db, this.owner, n, nowMs, untilMs)) {
        const prev = lease.get(n);
        if (!this.held.has(n) && prev && prev.owner !== this.owner)
          this.usableFrom.set(n, prev.leaseUntil + (this.o.graceMs ?? this.o.leaseMs));
        this.held.set(n, untilMs);
      } else this.held.delete(n);
    }
  }

  private async giveBack(n: number): Promise<void> {
    this.held.delete(n);
    await releaseShard(this.db, this.owner, n);
  }

  /**
   * Stops renewing and gives every lease back, so the other copies take them at once (the
   * dispatcher calls it once no attempt runs here).
   */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.loop) clearTimeout(this.loop);
    await this.running;
    try {
      for (const n of [...this.held.keys(), ...this.leaving]) await this.giveBack(n);
      await releasePresence(this.db, this.owner);
    } catch (err) {
      // They run out by themselves.
      this.o.log.warn({ err }, 'retry shard leases not given back');
    }
  }
}
