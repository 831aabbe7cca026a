/**
 * The shapes of ledger checkpoints and their Merkle leaves, shared by the sealer and verifier
 * (shared/ledger/checkpoint.ts, merkle.ts) and the store that keeps them
 * (shared/storage/ledger/checkpoint-store.ts).
 */

export interface Leaf {
  dispatchId: string;
  /** The event's createdAt: which period the dispatch belongs to. */
  createdAt: string;
  /** Hash of the dispatch's last chained entry when the leaf was taken. */
  headHash: string;
}

export interface CheckpointBody {
  v: 1;
  appId: string;
  /** 1 for the app's first checkpoint, then one more for each. */
  seq: number;
  /** `hash` of checkpoint `seq - 1`; 64 zeros for the first. */
  prevHash: string;
  /** The period sealed, by the event's createdAt: start inclusive, end exclusive (ISO). */
  periodStart: string;
  periodEnd: string;
  /** 1 the first time the period is sealed; each later seal of it is one more. */
  version: number;
  /** The checkpoint this one supersedes for the same period (null for version 1). */
  replaces: { seq: number; root: string } | null;
  leafCount: number;
  /** Merkle root (hex) of the period's leaves (see merkle.ts). */
  root: string;
  /** Start of the app's first period: the chain speaks for nothing before it. */
  chainStart: string;
  /** Every period from chainStart up to this instant had been sealed when this was signed. */
  sealedThrough: string;
  /** Period length and sealing lag the sealer ran with (verifiers judge staleness by them). */
  periodMs: number;
  lagMs: number;
  sealedAt: string;
  /** Id of the signing key (RFC 7638 thumbprint; see shared/signing/keys.ts). */
  keyId: string;
}

export interface Checkpoint extends CheckpointBody {
  /** SHA-256 (hex) of the canonical JSON of the body: what the next checkpoint's prevHash holds. */
  hash: string;
  /** Ed25519 over the canonical JSON of the body (base64url). */
  signature: string;
}

/**
 * For each period, the newest checkpoint in `chain` (the one in force), keeping the periods
 * that overlap [from, to); ordered by period start.
 */
export function latestOverlapping<C extends CheckpointBody>(
  chain: readonly C[],
  from: string,
  to: string,
): C[] {
  const latest = new Map<string, C>();
  for (const c of chain) {
    const seen = latest.get(c.periodStart);
    if (!seen || c.seq > seen.seq) latest.set(c.periodStart, c);
  }
  return [...latest.values()]
    .filter((c) => c.periodStart < to && c.periodEnd > from)
    .sort((a, b) => (a.periodStart < b.periodStart ? -1 : 1));
}
