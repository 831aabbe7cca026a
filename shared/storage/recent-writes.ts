import type { StoreOutages } from './outages.js';

/**
 * What a writer had acknowledged lately, to check again after a store outage in which the
 * store went away (shared/storage/outages.ts): a store killed with SIGKILL can lose the last
 * writes it acknowledged.
 *
 * Keeps `3 × WINDOW_MS` of entries, and more while an outage is open or its recheck has not
 * ended: then every entry from `WINDOW_MS` before the outage began is kept, however long the
 * outage and the recheck take (a recheck that fails is run again at the next recovery, with
 * the same entries). `MAX` entries at most, the oldest going first.
 */
export class RecentWrites<T> {
  /** How far before an outage an acknowledged write is checked again. */
  static readonly WINDOW_MS = 10_000;
  static readonly MAX = 20_000;
  private entries: { atMs: number; value: T }[] = [];
  private outages: StoreOutages | undefined;
  /** When each outage whose recheck has not ended yet began. */
  private readonly held: number[] = [];
  private chain: Promise<unknown> = Promise.resolve();

  add(values: Iterable<T>, now = Date.now()): void {
    for (const value of values) this.entries.push({ atMs: now, value });
    const holdFrom = Math.min(this.outages?.openSince ?? Infinity, ...this.held);
    const keepFrom = Math.min(now - 3 * RecentWrites.WINDOW_MS, holdFrom - RecentWrites.WINDOW_MS);
    let drop = 0;
    while (
      drop < this.entries.length &&
      (this.entries[drop]!.atMs < keepFrom || this.entries.length - drop > RecentWrites.MAX)
    )
      drop++;
    if (drop > 0) this.entries = this.entries.slice(drop);
  }

  /** The writes acknowledged from `WINDOW_MS` before an outage that began at `sinceMs`, in order. */
  before(sinceMs: number): T[] {
    const from = sinceMs - RecentWrites.WINDOW_MS;
    return this.entries.filter((e) => e.atMs >= from).map((e) => e.value);
  }

  /**
   * Runs `recheck(since)` after each outage of `outages` in which the store went away, one at a
   * time, in order, keeping the entries it needs until it has ended. `recheck` reads them with
   * `before(since)`; it must not throw (a failure it reports to `outages` reopens the outage,
   * and the next recovery runs it again). Returns the function that stops watching.
   */
  watch(outages: StoreOutages, recheck: (sinceMs: number) => Promise<unknown>): () => void {
    this.outages = outages;
    return outages.onRecovered((since, lost) => {
      // Only a store that went away can have lost what it acknowledged; a stalled one cannot.
      if (!lost) return;
      this.held.push(since);
      this.chain = this.chain
        .then(() => recheck(since))
        .catch(() => undefined)
        .finally(() => this.held.splice(this.held.indexOf(since), 1));
    });
  }

  /** Settles once every recheck started so far has ended (tests). */
  settled(): Promise<unknown> {
    return this.chain;
  }
}
