import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { Leaf } from '../domain/ledger/checkpoints.js';
import { leafHash, merkleRoot, sortLeaves } from './merkle.js';

const leaf = (i: number): Leaf => ({
  dispatchId: `dsp_${String(i).padStart(26, '0')}`,
  createdAt: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
  headHash: createHash('sha256').update(String(i)).digest('hex'),
});
const sha = (...parts: Buffer[]) => {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest();
};
const node = (a: Buffer, b: Buffer) => sha(Buffer.from([1]), a, b);

describe('merkleRoot (RFC 6962 shape)', () => {
  it('hashes the empty tree, one leaf, and splits at the largest power of two below n', () => {
    expect(merkleRoot([])).toBe(createHash('sha256').digest('hex'));
    const l = [0, 1, 2, 3, 4].map(leaf);
    const h = l.map(leafHash);
    // A leaf is sha256(0x00 ‖ canonical JSON with sorted keys).
    const json = `{"createdAt":"${l[0]!.createdAt}","dispatchId":"${l[0]!.dispatchId}","headHash":"${l[0]!.headHash}"}`;
    expect(h[0]).toEqual(sha(Buffer.from([0]), Buffer.from(json)));
    expect(merkleRoot(l.slice(0, 1))).toBe(h[0]!.toString('hex'));
    expect(merkleRoot(l.slice(0, 2))).toBe(node(h[0]!, h[1]!).toString('hex'));
    expect(merkleRoot(l.slice(0, 3))).toBe(node(node(h[0]!, h[1]!), h[2]!).toString('hex'));
    expect(merkleRoot(l)).toBe(
      node(node(node(h[0]!, h[1]!), node(h[2]!, h[3]!)), h[4]!).toString('hex'),
    );
  });

  it('changes with any leaf changed, dropped, added, reordered or duplicated', () => {
    for (const n of [1, 2, 3, 7, 8, 9, 33]) {
      const l = Array.from({ length: n }, (_, i) => leaf(i));
      const root = merkleRoot(l);
      const variants: Leaf[][] = [l.slice(1), l.slice(0, -1), [...l, leaf(n)], [...l, l[n - 1]!]];
      if (n > 1) variants.push([l[1]!, l[0]!, ...l.slice(2)]);
      for (let i = 0; i < n; i++) {
        variants.push(l.map((x, j) => (j === i ? { ...x, headHash: '0'.repeat(64) } : x)));
        variants.push(l.map((x, j) => (j === i ? { ...x, dispatchId: `${x.dispatchId}X` } : x)));
      }
      for (const v of variants) expect(merkleRoot(v), `n=${n}`).not.toBe(root);
    }
  });

  it('sorts leaves by createdAt then dispatchId', () => {
    const a = { ...leaf(1), dispatchId: 'dsp_B' };
    const b = { ...leaf(1), dispatchId: 'dsp_A' };
    expect(sortLeaves([leaf(2), a, b]).map((l) => l.dispatchId)).toEqual([
      'dsp_A',
      'dsp_B',
      leaf(2).dispatchId,
    ]);
  });
});
