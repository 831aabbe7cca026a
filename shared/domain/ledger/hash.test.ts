import { describe, expect, it } from 'vitest';
import { GENESIS, canonicalJson, chainHash } from './hash.js';

describe('canonicalJson', () => {
  it.each([
    [{ b: 1, a: 2 }, '{"a":2,"b":1}'],
    [{ z: { y: 1, x: [3, { d: 1, c: 2 }] } }, '{"z":{"x":[3,{"c":2,"d":1}],"y":1}}'],
    [{ a: undefined, b: null }, '{"b":null}'],
    [[undefined, 1], '[null,1]'],
    ['é"', '"é\\""'],
    [12.5, '12.5'],
  ])('%j → %s', (value, text) => {
    expect(canonicalJson(value)).toBe(text);
  });

  it('refuses non-finite numbers', () => {
    expect(() => canonicalJson({ a: Number.NaN })).toThrow();
  });
});

describe('chainHash', () => {
  it('depends on the previous hash and on every field, not on key order', () => {
    const h = chainHash(GENESIS, { a: 1, b: 'x' });
    expect(h).toMatch(/^[0-9a-f]{64}$/);
    expect(chainHash(GENESIS, { b: 'x', a: 1 })).toBe(h);
    expect(chainHash(h, { a: 1, b: 'x' })).not.toBe(h);
    expect(chainHash(GENESIS, { a: 1, b: 'y' })).not.toBe(h);
  });
});
