/**
 * What a writer had acknowledged lately, to check again after a store outage in which the
 * store went away (shared/storage/outages.ts): a store killed with SIGKILL can lose the last
 * writes it acknowledged. Keeps `3 × WINDOW_MS` of entries, `MAX` at most (the oldest go first).
 */
export class RecentWrites<T> {
  /** How far before an outage an acknowledged write is checked again. */
  static readonly WINDOW_MS = 10_000;
  static readonly MAX = 20_000;
  private entries: { atMs: number; value: T }[] = [];

  add(values: Iterable<T>, now = Date.now()): void {
    for (const value of values) this.entries.push({ atMs: now, value });
    const keepFrom = now - 3 * RecentWrites.WINDOW_MS;
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
}
