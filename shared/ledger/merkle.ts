import { createHash } from 'node:crypto';
import { canonicalJson } from '../domain/ledger/hash.js';
import type { Leaf } from '../domain/ledger/checkpoints.js';

/**
 * The Merkle tree of a ledger checkpoint, shaped as in RFC 6962 (Certificate Transparency):
 * leaves hashed with a 0x00 prefix and inner nodes with 0x01, so a leaf can never pass for a
 * node; a tree of n leaves splits at the largest power of two below n; the empty tree's root
 * is SHA-256 of nothing. One leaf per dispatch, in `{createdAt}#{dispatchId}` order, holding
 * the hash of the dispatch's last chained entry: the root commits to every entry of every
 * dispatch of the period, and to their number and order.
 */

/** The order of leaves in a tree (and of dispatches in the ledger's time index). */
export const leafKey = (l: Pick<Leaf, 'createdAt' | 'dispatchId'>) =>
  `${l.createdAt}#${l.dispatchId}`;

export function leafHash(l: Leaf): Buffer {
  const body = canonicalJson({
    createdAt: l.createdAt,
    dispatchId: l.dispatchId,
    headHash: l.headHash,
  });
  return createHash('sha256')
    .update(Buffer.from([0]))
    .update(body, 'utf8')
    .digest();
}

function node(left: Buffer, right: Buffer): Buffer {
  return createHash('sha256')
    .update(Buffer.from([1]))
    .update(left)
    .update(right)
    .digest();
}

function rootOf(hashes: Buffer[], lo: number, hi: number): Buffer {
  const n = hi - lo;
  if (n === 1) return hashes[lo]!;
  let k = 1;
  while (k * 2 < n) k *= 2;
  return node(rootOf(hashes, lo, lo + k), rootOf(hashes, lo + k, hi));
}

/** The root (hex) over leaves in the given order. */
export function merkleRoot(leaves: readonly Leaf[]): string {
  if (leaves.length === 0) return createHash('sha256').digest('hex');
  return rootOf(leaves.map(leafHash), 0, leaves.length).toString('hex');
}

/** Leaves sorted into tree order (a copy). */
export const sortLeaves = (leaves: readonly Leaf[]): Leaf[] =>
  [...leaves].sort((a, b) => (leafKey(a) < leafKey(b) ? -1 : leafKey(a) > leafKey(b) ? 1 : 0));
