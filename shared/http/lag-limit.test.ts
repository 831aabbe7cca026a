import { describe, expect, it } from 'vitest';
import { LagLimit } from './lag-limit.js';

describe('LagLimit', () => {
  it('halves on each lagging window down to its floor, then grows by an eighth of max once the lag is under half the threshold', () => {
    const l = new LagLimit({ max: 64, shedMs: 200, min: 4 });
    expect(l.limit).toBe(64);
    expect(l.observe(201)).toBe(32);
    expect(l.observe(500)).toBe(16);
    expect(l.observe(300)).toBe(8);
    expect(l.observe(300)).toBe(4);
    expect(l.observe(900)).toBe(4);
    // Between half the threshold and the threshold: held.
    expect(l.observe(150)).toBe(4);
    expect(l.observe(200)).toBe(4);
    expect(l.observe(100)).toBe(12);
    expect(l.observe(10)).toBe(20);
    for (let i = 0; i < 10; i++) l.observe(0);
    expect(l.limit).toBe(64);
  });

  it('never moves with the control off (shedMs 0), and a floor above max is max', () => {
    const off = new LagLimit({ max: 64, shedMs: 0 });
    expect(off.observe(10_000)).toBe(64);
    const small = new LagLimit({ max: 2, shedMs: 100, min: 4 });
    expect(small.observe(1_000)).toBe(2);
    const one = new LagLimit({ max: 3, shedMs: 100, min: 1 });
    expect(one.observe(1_000)).toBe(1);
    expect(one.observe(0)).toBe(2);
    expect(one.observe(0)).toBe(3);
  });
});
