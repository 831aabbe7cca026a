import { describe, expect, it } from 'vitest';
import { StoreOutages } from './outages.js';
import { RecentWrites } from './recent-writes.js';

const W = RecentWrites.WINDOW_MS;

describe('recent writes', () => {
  it('keeps three windows of entries when no outage is open', () => {
    const r = new RecentWrites<string>();
    r.add(['old'], 0);
    r.add(['mid'], 2 * W);
    r.add(['new'], 3 * W + 1);
    expect(r.before(0)).toEqual(['mid', 'new']);
  });

  it('keeps what an open outage and its recheck need, however long they take', async () => {
    const outages = new StoreOutages();
    const r = new RecentWrites<string>();
    let release!: () => void;
    const seen: string[][] = [];
    r.watch(outages, async (since) => {
      seen.push(r.before(since));
      await new Promise<void>((res) => (release = res));
    });
    r.add(['before-window'], 0);
    r.add(['acknowledged'], 5 * W);
    outages.failed(6 * W, true);
    // Writes acknowledged long after the outage began (another table, a retry) prune nothing
    // from a window before it.
    r.add(['later'], 20 * W);
    expect(r.before(6 * W)).toEqual(['acknowledged', 'later']);
    outages.succeeded();
    // The recheck is still running: the entries stay.
    await new Promise((res) => setImmediate(res));
    r.add(['during-recheck'], 30 * W);
    expect(r.before(6 * W)).toEqual(['acknowledged', 'later', 'during-recheck']);
    release();
    await r.settled();
    expect(seen).toEqual([['acknowledged', 'later']]);
    // Once it ended, the usual three windows again.
    r.add(['after'], 40 * W);
    expect(r.before(0)).toEqual(['after']);
  });

  it('checks nothing after an outage in which the store only stalled', async () => {
    const outages = new StoreOutages();
    const r = new RecentWrites<string>();
    let calls = 0;
    r.watch(outages, async () => {
      calls++;
    });
    outages.failed(0, false);
    outages.succeeded();
    await r.settled();
    expect(calls).toBe(0);
  });
});
