/**
 * Per-principal webhook order (an app's `webhookOrdering: 'principal'`, docs/webhooks.md,
 * Ordering): a principal's dispatches of one app queue in a lane. Its head is being delivered
 * or retried; the held ones wait, in the order they came, until the head is settled (delivered,
 * or failed at its last attempt or by the endpoint's disablement). The store behind the port
 * makes every change conditional on the version read, so two copies never both move a lane.
 */
export interface PrincipalLane {
  /** The dispatch being delivered or retried. */
  head: string;
  /** Dispatches waiting for it, first to go first. */
  held: string[];
  /** When the head became the head (epoch ms). */
  since: number;
  /** Changes with every write; each write is conditional on the version it read. */
  version: number;
}

export interface PrincipalLanes {
  read(appId: string, referenceId: string): Promise<PrincipalLane | undefined>;
  /** Makes `dispatchId` the head of a principal without a lane; false when a lane exists. */
  claim(appId: string, referenceId: string, dispatchId: string): Promise<boolean>;
  /** Queues `dispatchId` behind the lane as read; false when the lane changed since. */
  hold(
    appId: string,
    referenceId: string,
    lane: PrincipalLane,
    dispatchId: string,
  ): Promise<boolean>;
  /**
   * The head is settled: the first held dispatch becomes the head, or the lane goes when none
   * waits. False when the lane changed since it was read.
   */
  advance(appId: string, referenceId: string, lane: PrincipalLane): Promise<boolean>;
}

/** A lane longer than this takes no more held dispatches (they go unordered, and are counted). */
export const MAX_HELD = 1_000;

/** The lanes in memory, for unit tests of the logic built on them (same conformance suite). */
export function memoryPrincipalLanes(now: () => number = Date.now): PrincipalLanes {
  const lanes = new Map<string, PrincipalLane>();
  const k = (a: string, r: string) => `${a}\u0000${r}`;
  const same = (a: string, r: string, lane: PrincipalLane) =>
    lanes.get(k(a, r))?.version === lane.version;
  return {
    async read(a, r) {
      const l = lanes.get(k(a, r));
      return l && { ...l, held: [...l.held] };
    },
    async claim(a, r, id) {
      if (lanes.has(k(a, r))) return false;
      lanes.set(k(a, r), { head: id, held: [], since: now(), version: 1 });
      return true;
    },
    async hold(a, r, lane, id) {
      if (!same(a, r, lane) || lane.held.length >= MAX_HELD) return false;
      lanes.set(k(a, r), { ...lane, held: [...lane.held, id], version: lane.version + 1 });
      return true;
    },
    async advance(a, r, lane) {
      if (!same(a, r, lane)) return false;
      const [next, ...rest] = lane.held;
      if (next === undefined) lanes.delete(k(a, r));
      else
        lanes.set(k(a, r), {
          head: next,
          held: rest,
          since: now(),
          version: lane.version + 1,
        });
      return true;
    },
  };
}
