import { describe, expect, it } from 'vitest';
import { Admission } from './admission.js';

describe('Admission', () => {
  it('lets up to max messages in while healthy', () => {
    const a = new Admission({ max: 4 });
    expect(a.room()).toBe(4);
    const t = a.take(3);
    expect(a.room()).toBe(1);
    a.release('ok', t);
    expect(a.room()).toBe(2);
    expect(a.limit).toBe(4);
  });

  it('halves on a failure, once per wave: work admitted before a cut cannot cut again', () => {
    const a = new Admission({ max: 1_000 });
    const first = a.take(200);
    a.release('failed', first); // 200 in flight when it failed: the limit falls to 100
    expect(a.limit).toBe(100);
    for (let i = 0; i < 199; i++) a.release('failed', first); // the rest of the same wave
    expect(a.limit).toBe(100);
    expect(a.inFlight).toBe(0);
    // Work admitted after the cut that fails too: a second wave, half of the smaller of the
    // limit and what was in flight.
    const second = a.take(60);
    a.release('failed', second);
    expect(a.limit).toBe(30);
    a.release('failed', second);
    expect(a.limit).toBe(30);
  });

  it('falls to one probe at a time while everything fails, and grows back on successes', () => {
    const a = new Admission({ max: 64 });
    for (let wave = 0; wave < 10; wave++) {
      const n = a.room();
      const t = a.take(n);
      for (let i = 0; i < n; i++) a.release('failed', t);
    }
    expect(a.limit).toBe(1);
    expect(a.inFlight).toBe(0);
    // Each success adds one slot: the limit doubles per round of in-flight work.
    let t = a.take(1);
    a.release('ok', t);
    expect(a.limit).toBe(2);
    t = a.take(2);
    a.release('ok', t);
    a.release('ok', t);
    expect(a.limit).toBe(4);
    for (let i = 0; i < 100; i++) a.release('ok', a.take(1));
    expect(a.limit).toBe(64);
  });

  it('keeps the floor it is given', () => {
    const a = new Admission({ max: 64, min: 8 });
    for (let wave = 0; wave < 10; wave++) {
      const n = a.room();
      const t = a.take(n);
      for (let i = 0; i < n; i++) a.release('failed', t);
    }
    expect(a.limit).toBe(8);
  });

  it('frees a slot without changing the limit for a neutral outcome', () => {
    const a = new Admission({ max: 8 });
    const t = a.take(8);
    a.release('neutral', t);
    expect(a.limit).toBe(8);
    expect(a.room()).toBe(1);
  });

  it('wakes a waiter when a slot frees, and times out when none does', async () => {
    const a = new Admission({ max: 1 });
    const t = a.take(1);
    expect(await a.waitForRoom(10)).toBe(false);
    const waiting = a.waitForRoom(5_000);
    a.release('ok', t);
    expect(await waiting).toBe(true);
  });

  it('acquire takes a slot once one frees, and gives up when no longer live', async () => {
    const a = new Admission({ max: 1 });
    const t = a.take(1);
    const got = a.acquire(() => true);
    a.release('neutral', t);
    expect(await got).toBe(0);
    expect(a.inFlight).toBe(1);
    expect(await a.acquire(() => false)).toBeUndefined();
    expect(a.inFlight).toBe(1);
  });
});
