import { createHash } from 'node:crypto';

/** The `prevHash` of the first entry of a chain. */
export const GENESIS = '0'.repeat(64);

/**
 * Canonical JSON: object keys sorted at every level, no whitespace, `undefined` members
 * dropped (as DynamoDB drops them), so a stored entry hashes the same after a round trip.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    if (typeof value === 'number' && !Number.isFinite(value)) throw new Error('non-finite number');
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v ?? null)).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

/** `sha256(prevHash + canonical JSON of the entry)`, hex. The entry must not hold its own hash. */
export function chainHash(prevHash: string, entry: Record<string, unknown>): string {
  return createHash('sha256').update(prevHash).update(canonicalJson(entry)).digest('hex');
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}
