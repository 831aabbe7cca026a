/**
 * Offsets of one partition handed to a pipelined handler, in fetch order, and how far they may
 * be committed: the position after the longest prefix whose messages are done. Pure
 * bookkeeping (no Kafka), so the commit rule is unit-tested on its own.
 */
export class PartitionTracker {
  private readonly entries: { offset: number; done: boolean }[] = [];
  private head = 0;
  /** The position known committed (or fetched from) — the start of the uncertain zone. */
  committed: number;
  /** The position the done prefix reaches (what the next commit sends). */
  position: number;
  /** The next offset this partition will fetch. */
  next: number;
  private readonly waiters: (() => void)[] = [];

  /** Offsets from here on were appended after the assignment: no one else handled them. */
  private readonly uncertainEnd: number;

  constructor(
    /** The first offset fetched after the assignment: the group's committed position. */
    readonly start: number,
    /** At most this many offsets past the committed position may be handed out. */
    readonly maxUncommitted: number,
    /** The partition's end (high watermark) as first fetched after the assignment. */
    endAtAssignment = Number.POSITIVE_INFINITY,
  ) {
    this.uncertainEnd = Math.min(start + maxUncommitted, endAtAssignment);
    this.committed = start;
    this.position = start;
    this.next = start;
  }

  /**
   * True for offsets a previous owner of the partition may already have handled: it obeyed
   * the same bound from a committed position no later than ours, and it can only have seen
   * offsets that existed before this assignment.
   */
  uncertain(offset: number): boolean {
    return offset < this.uncertainEnd;
  }

  /** How many more offsets may be handed out before a commit moves the bound. */
  room(): number {
    return Math.max(0, this.committed + this.maxUncommitted - this.next);
  }

  add(offset: number): { offset: number; done: boolean } {
    const e = { offset, done: false };
    this.entries.push(e);
    this.next = offset + 1;
    return e;
  }

  /** Marks an entry done; returns true when the committable position moved. */
  done(e: { offset: number; done: boolean }): boolean {
    e.done = true;
    let moved = false;
    while (this.head < this.entries.length && this.entries[this.head]!.done) {
      this.position = this.entries[this.head]!.offset + 1;
      this.head++;
      moved = true;
    }
    if (this.head > 1024 && this.head * 2 > this.entries.length) {
      this.entries.splice(0, this.head);
      this.head = 0;
    }
    return moved;
  }

  /** Offsets handed out and not yet done. */
  get outstanding(): number {
    return this.entries.length - this.head;
  }

  /** Records a successful commit of `position` and wakes whoever waits for room. */
  committedTo(position: number): void {
    if (position <= this.committed) return;
    this.committed = position;
    for (const w of this.waiters.splice(0)) w();
  }

  /** Resolves when a commit may have made room (or after `ms`, to let the caller heartbeat). */
  waitForRoom(ms: number): Promise<void> {
    if (this.room() > 0) return Promise.resolve();
    return new Promise((resolve) => {
      const t = setTimeout(resolve, ms);
      this.waiters.push(() => {
        clearTimeout(t);
        resolve();
      });
    });
  }
}
