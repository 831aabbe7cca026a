import { FLAGS, worstFlag, type ComplianceFlag } from '../domain/compliance/flags.js';
import { GENESIS, chainHash } from '../domain/ledger/hash.js';
import { DISPATCH_SK } from '../storage/ledger/dispatches.js';
import { RETAIN_ATTR } from '../domain/ledger/retention.js';

/**
 * Checking one dispatch from its own entries, pure: the hash chain, and the head fields
 * (complianceFlag, deliveryStatus, attempt count and times) against the entries that decide
 * them. Works on the stored items and on the API/export shape alike, so the ledger API and an
 * auditor holding only an export reach the same verdict.
 */

/** One chained entry: its content as hashed (prevHash included, hash excluded) and its hash. */
export interface ChainEntry {
  /** Where it is reported: the sort key (ATT#002) or the export position (attempts[1]). */
  label: string;
  body: Record<string, unknown>;
  hash: string;
}

export type ChainResult =
  /** `hashes`: the creation entry's hash, then every entry's, in chain order. */
  { ok: true; hashes: string[] } | { ok: false; at: string; reason: string };

/**
 * Recomputes a chain. The creation fields are the first entry; from there each entry is the
 * one whose `prevHash` is the previous entry's hash (attempts, postbacks and flags interleave
 * in time, so storage order is not chain order). Every entry must be on that single path, each
 * hash must match its content, and the last must be `headHash`.
 */
export function checkChain(
  creation: Record<string, unknown>,
  entryHash: unknown,
  entries: readonly ChainEntry[],
  headHash: unknown,
): ChainResult {
  if (creation.prevHash !== GENESIS || chainHash(GENESIS, { ...creation }) !== entryHash)
    return { ok: false, at: DISPATCH_SK, reason: 'creation entry does not match its hash' };
  const next = new Map<string, ChainEntry[]>();
  for (const e of entries) {
    const key = String(e.body.prevHash);
    next.set(key, [...(next.get(key) ?? []), e]);
  }
  let prev = String(entryHash);
  const hashes = [prev];
  const seen = new Set<ChainEntry>();
  for (;;) {
    const following = next.get(prev) ?? [];
    if (following.length === 0) break;
    if (following.length > 1)
      return { ok: false, at: following[1]!.label, reason: 'the chain forks here' };
    const e = following[0]!;
    if (seen.has(e)) return { ok: false, at: e.label, reason: 'the chain loops' };
    seen.add(e);
    if (chainHash(prev, e.body) !== e.hash)
      return { ok: false, at: e.label, reason: 'hash does not match' };
    prev = e.hash;
    hashes.push(prev);
  }
  const unlinked = entries.find((e) => !seen.has(e));
  if (unlinked) return { ok: false, at: unlinked.label, reason: 'prevHash does not link' };
  if (prev !== headHash)
    return { ok: false, at: DISPATCH_SK, reason: 'headHash is not the last entry' };
  return { ok: true, hashes };
}

/**
 * The chained entries of a dispatch as stored (its items after the dispatch item): each body is
 * the item without its storage key, hash and TTL, none of which the hash covers.
 */
export function storedEntries(items: readonly Record<string, unknown>[]): ChainEntry[] {
  return items.map(({ pk: _pk, sk, hash, [RETAIN_ATTR]: _ttl, ...body }) => ({
    label: String(sk),
    body,
    hash: String(hash),
  }));
}

/** The creation entry as hashed, from a dispatch item or its API shape (same field names). */
export function creationEntry(d: Record<string, unknown>): Record<string, unknown> {
  return {
    type: 'dispatch',
    dispatchId: d.dispatchId,
    eventId: d.eventId,
    event: d.event,
    appId: d.appId,
    environment: d.environment,
    referenceId: d.referenceId,
    createdAt: d.createdAt,
    dispatchedAt: d.dispatchedAt,
    postbackRequired: d.postbackRequired,
    postbackDueAt: d.postbackDueAt,
    bodySha256: d.bodySha256,
    prevHash: GENESIS,
  };
}

type Loose = Record<string, unknown>;

/** A dispatch as the ledger API and the export show it (GET /dispatches/{id}). */
export interface DispatchView extends Loose {
  dispatchId: string;
  createdAt: string;
  entryHash: string;
  headHash: string;
  attempts: Loose[];
  postbacks: Loose[];
  /** The flag changes as chained entries (the API's flagHistory shows only flag, at, cause). */
  flagEntries: Loose[];
}

const asEntry = (label: string, type: string, e: Loose, extra: Loose = {}): ChainEntry => {
  const { hash, ...rest } = e;
  return { label, body: { type, ...extra, ...rest }, hash: String(hash) };
};

/** The chained entries of an exported dispatch (the view drops `type`, and dispatchId from attempts). */
export function viewEntries(d: DispatchView): ChainEntry[] {
  return [
    ...d.attempts.map((a, i) =>
      asEntry(`attempts[${i}]`, 'attempt', a, { dispatchId: d.dispatchId }),
    ),
    ...d.postbacks.map((p, i) => asEntry(`postbacks[${i}]`, 'postback', p)),
    ...d.flagEntries.map((f, i) => asEntry(`flagEntries[${i}]`, 'flag', f)),
  ];
}

export function checkViewChain(d: DispatchView): ChainResult {
  return checkChain(creationEntry(d), d.entryHash, viewEntries(d), d.headHash);
}

export interface HeadProblem {
  field: string;
  stored: unknown;
  /** What the entries say (for deliveryStatus of old entries, the values they allow). */
  fromEntries: unknown;
}

const num = (v: unknown) => (typeof v === 'number' ? v : Number(v));

/**
 * The head fields that disagree with the entries deciding them:
 * - complianceFlag: the flag of the last flag entry (by seq), null without one;
 * - worstFlag (when shown): the most severe flag of any flag entry, null without one;
 * - deliveryStatus: the status recorded by the last attempt; for attempts recorded before the
 *   status was chained, `delivered` if any attempt delivered (a delivered dispatch never goes
 *   back), `pending` without attempts, otherwise pending or failed;
 * - attemptCount and lastAttemptAt: the number of attempts and the last one's time;
 * - deliveredAt: null, or the time of an attempt that delivered.
 */
export function headProblems(h: {
  complianceFlag?: unknown;
  worstFlag?: unknown;
  deliveryStatus?: unknown;
  attemptCount?: unknown;
  lastAttemptAt?: unknown;
  deliveredAt?: unknown;
  attempts: readonly Loose[];
  flags: readonly Loose[];
}): HeadProblem[] {
  const out: HeadProblem[] = [];
  const flags = [...h.flags].sort((a, b) => num(a.seq) - num(b.seq));
  const flag = flags.at(-1)?.flag ?? null;
  if ((h.complianceFlag ?? null) !== flag)
    out.push({ field: 'complianceFlag', stored: h.complianceFlag ?? null, fromEntries: flag });
  if (h.worstFlag !== undefined) {
    const worst = flags
      .map((f) => f.flag)
      .filter((f): f is ComplianceFlag => (FLAGS as readonly unknown[]).includes(f))
      .reduce<ComplianceFlag | null>((w, f) => worstFlag(w, f), null);
    if (h.worstFlag !== worst)
      out.push({ field: 'worstFlag', stored: h.worstFlag, fromEntries: worst });
  }
  const attempts = [...h.attempts].sort((a, b) => num(a.attempt) - num(b.attempt));
  const last = attempts.at(-1);
  const delivered = attempts.filter((a) => a.outcome === 'delivered');
  let allowed: unknown[];
  if (!last) allowed = ['pending'];
  else if (typeof last.deliveryStatus === 'string')
    allowed = [delivered.length > 0 ? 'delivered' : last.deliveryStatus];
  else allowed = delivered.length > 0 ? ['delivered'] : ['pending', 'failed'];
  if (!allowed.includes(h.deliveryStatus))
    out.push({
      field: 'deliveryStatus',
      stored: h.deliveryStatus,
      fromEntries: allowed.length === 1 ? allowed[0] : allowed,
    });
  if (h.attemptCount !== undefined && num(h.attemptCount) !== attempts.length)
    out.push({ field: 'attemptCount', stored: h.attemptCount, fromEntries: attempts.length });
  const lastAt = last?.time ?? null;
  if ((h.lastAttemptAt ?? null) !== lastAt)
    out.push({ field: 'lastAttemptAt', stored: h.lastAttemptAt ?? null, fromEntries: lastAt });
  const deliveredAt = h.deliveredAt ?? null;
  if (deliveredAt !== null && !delivered.some((a) => a.time === deliveredAt))
    out.push({
      field: 'deliveredAt',
      stored: deliveredAt,
      fromEntries: delivered.map((a) => a.time),
    });
  return out;
}

export const viewHeadProblems = (d: DispatchView) => headProblems({ ...d, flags: d.flagEntries });
