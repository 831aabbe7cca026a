import { describe, expect, it } from 'vitest';
import { bucketsToSweep } from './due.js';

describe('bucketsToSweep', () => {
  it.each([
    [100, 100, [100]],
    [98, 100, [98, 99, 100]],
    [100, 99, []], // a watermark ahead of this clock: nothing yet
    [0, 200, [...Array.from({ length: 61 }, (_, i) => i), 198, 199, 200]],
    [0, 62, Array.from({ length: 63 }, (_, i) => i)],
  ])('from %i to %i', (from, current, expected) => {
    expect(bucketsToSweep(from, current)).toEqual(expected);
  });
});
