import { describe, expect, it } from 'vitest';
import { FRESH_MS, actionFor, isDoubtful, writeModeFor } from './classify.js';

describe('dispatcher classification', () => {
  const now = 1_000_000;
  const skew = 2_000;
  const arrival = (o: Partial<Parameters<typeof isDoubtful>[0]> = {}) => ({
    uncertain: false,
    assignedAtMs: now - 60_000,
    createdAtMs: now - 100,
    ...o,
  });

  it('trusts an event created lately, after the assignment', () => {
    expect(isDoubtful(arrival(), now, skew)).toBe(false);
  });

  it('doubts an event in the uncertain zone whatever its age', () => {
    expect(isDoubtful(arrival({ uncertain: true }), now, skew)).toBe(true);
  });

  it('doubts an event created before the assignment, or within the clock skew after it', () => {
    expect(isDoubtful(arrival({ assignedAtMs: now - 50 }), now, skew)).toBe(true);
    expect(isDoubtful(arrival({ assignedAtMs: now - 100 - skew }), now, skew)).toBe(true);
    expect(isDoubtful(arrival({ assignedAtMs: now - 101 - skew }), now, skew)).toBe(false);
  });

  it('doubts an event older than FRESH_MS (a late copy from the outbox)', () => {
    expect(isDoubtful(arrival({ createdAtMs: now - FRESH_MS }), now, skew)).toBe(true);
    expect(isDoubtful(arrival({ createdAtMs: now - FRESH_MS + 1 }), now, skew)).toBe(false);
  });

  it('joins running work first, then skips what is recorded, else dispatches', () => {
    expect(actionFor({ running: true, recorded: true })).toBe('join');
    expect(actionFor({ running: false, recorded: true })).toBe('skip');
    expect(actionFor({ running: false, recorded: false })).toBe('dispatch');
  });

  it('writes without conditions only a trusted event whose partition is held', () => {
    expect(writeModeFor(false, true)).toBe('fast');
    expect(writeModeFor(true, true)).toBe('safe');
    expect(writeModeFor(false, false)).toBe('safe');
  });
});
