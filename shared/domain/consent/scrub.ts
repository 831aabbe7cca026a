import type { ConsentDeps } from './deps.js';
import { getApp } from '../apps.js';
import { keyedHash } from '../crypto.js';
import type { StoredTransaction } from './model.js';
import { deriveStatus } from './states.js';
import type { Identity, ScrubMark } from './sweep-ports.js';
import { SCRUB_AFTER_MS } from './timers.js';

/**
 * The 30-day erasure sweep's data minimisation (docs/architecture.md, 30-day erasure sweep): once
 * every transaction of a principal is erased and 30 days (compressed for sandbox apps) have passed
 * since the last erase, the service's own copies of the person's e-mail and user id go: the
 * principal's `email`/`userId`, the user pointer item (its key is the user id), the user id of
 * the user's claim at its derived referenceId (repository.ts, `putClaim`; the claim itself stays,
 * so that referenceId is never free again while a pointer item may count on it being taken), and
 * any `userId`/`email` on transaction items. What remains is pseudonymous proof:
 * referenceId, record ids, states and times, and `userIdHash`, a keyed hash of the user id (HMAC
 * under a key derived from the service's key), which can confirm a claimed id but not reveal one.
 * Each step is idempotent, so a sweep cut short is simply run again.
 */

export interface ScrubCounts {
  principals: number;
  /** User pointer items deleted, and claims at a derived referenceId scrubbed. */
  userPointers: number;
  transactions: number;
}

export type ScrubOutcome =
  | { status: 'scrubbed'; counts: ScrubCounts }
  /** Nothing to do (yet): the principal is unknown, still has live consent, or the erase is recent. */
  | { status: 'unknown' | 'not_erased' | 'not_due' };

/** When the transaction's last record was erased (records carry the time of their last change). */
const erasedAt = (t: StoredTransaction) =>
  Math.max(Date.parse(t.updatedAt), ...t.records.map((r) => Date.parse(r.updatedAt)));

const hasIdentity = (i: Identity) => i.userId !== undefined || i.email !== undefined;

export async function scrubPrincipal(
  rt: ConsentDeps,
  appId: string,
  referenceId: string,
  now: Date,
): Promise<ScrubOutcome> {
  const store = rt.sweeps.scrub;
  const held = await store.loadHoldings(appId, referenceId);
  if (!held) return { status: 'unknown' };
  const txns = held.transactions;
  if (txns.some((t) => deriveStatus(t.records.map((r) => r.state)) !== 'erased'))
    return { status: 'not_erased' };
  const app = await getApp(rt, appId);
  const scale = Math.max(1, app?.slaTimeScale ?? 1);
  const last = Math.max(0, ...txns.map(erasedAt));
  // A later erase scheduled its own sweep; this one is early for it.
  if (last + SCRUB_AFTER_MS / scale > now.getTime()) return { status: 'not_due' };

  const at = now.toISOString();
  const hash = (userId: unknown) => keyedHash(rt.config, 'user', String(userId));
  const mark = (i: Identity): ScrubMark =>
    i.userId === undefined ? { at } : { at, userIdHash: hash(i.userId) };
  const counts: ScrubCounts = { principals: 0, userPointers: 0, transactions: 0 };
  // The principal goes last: once it has no identity the whole scrub is done, and a sweep cut
  // short before that finds the principal still identified and runs again.
  const identified = txns.filter(hasIdentity);
  const principal = hasIdentity(held.principal) ? held.principal : undefined;

  const userIds = new Set(
    [...identified, ...(principal ? [principal] : [])]
      .map((i): unknown => i.userId)
      .filter((u): u is string => typeof u === 'string'),
  );
  for (const userId of userIds) {
    // The id may since belong to a new principal (the person came back): not ours to remove.
    if (await store.deleteUserPointer(appId, userId, referenceId)) counts.userPointers++;
    // The user's claim at its derived referenceId, if it is this principal's.
    const claimRef = await store.derivedReferenceOf(appId, userId);
    const claimMark = { at, userIdHash: hash(userId) };
    if (await store.scrubClaim(appId, claimRef, { referenceId, userId }, claimMark))
      counts.userPointers++;
  }

  for (const t of identified) {
    await store.scrubTransaction(t, mark(t));
    counts.transactions++;
  }
  if (principal) {
    await store.scrubPrincipal(appId, referenceId, mark(principal));
    counts.principals++;
  }
  return { status: 'scrubbed', counts };
}
