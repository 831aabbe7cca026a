import type { KeyObject } from 'node:crypto';
import { signFor, verifyFor, type SigningKey } from '../signing/keys.js';
import { canonicalJson, sha256Hex } from './hash.js';

/**
 * Signed ledger checkpoints (docs/security.md, Ledger checkpoints). Each app has one chain of
 * checkpoints. A checkpoint seals one period of the app's dispatches (by the event's createdAt):
 * the Merkle root of their current chain heads, signed with the service's Ed25519 key, with the
 * hash of the app's previous checkpoint inside. A period is sealed once it has closed; when a
 * dispatch of a sealed period gains entries later (a retry, a postback, a flag) the period is
 * sealed again as a new version that names the one it replaces, and the sealer only writes it when
 * every dispatch of the old version is still there and still carries the entries the old version
 * sealed. Pure: storage is in checkpoint-store.ts.
 */

/** What a checkpoint signature is for (receipts sign under their own purpose). */
export const CHECKPOINT_PURPOSE = 'svc-ledger-checkpoint/v1';

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

const BODY_KEYS: (keyof CheckpointBody)[] = [
  'v',
  'appId',
  'seq',
  'prevHash',
  'periodStart',
  'periodEnd',
  'version',
  'replaces',
  'leafCount',
  'root',
  'chainStart',
  'sealedThrough',
  'periodMs',
  'lagMs',
  'sealedAt',
  'keyId',
];

/** Exactly the signed fields of a checkpoint (storage keys, hash, signature and leaves dropped). */
export function bodyOf(c: object): CheckpointBody {
  const r = c as Record<string, unknown>;
  return Object.fromEntries(BODY_KEYS.map((k) => [k, r[k] ?? null])) as unknown as CheckpointBody;
}

export const checkpointHash = (body: CheckpointBody) => sha256Hex(canonicalJson(body));

export function signCheckpoint(key: SigningKey, body: CheckpointBody): Checkpoint {
  const b = bodyOf({ ...body, keyId: key.kid });
  return {
    ...b,
    hash: checkpointHash(b),
    signature: signFor(key, CHECKPOINT_PURPOSE, canonicalJson(b)),
  };
}

/** Why a checkpoint is not authentic, or undefined when it is. */
export function checkpointProblem(
  cp: object,
  keys: ReadonlyMap<string, KeyObject>,
): string | undefined {
  const c = cp as Record<string, unknown>;
  const body = bodyOf(c);
  const key = keys.get(String(body.keyId));
  if (!key) return `signed with key ${String(body.keyId)}, which is not among the public keys`;
  if (
    typeof c.signature !== 'string' ||
    !verifyFor(key, CHECKPOINT_PURPOSE, canonicalJson(body), c.signature)
  )
    return 'signature does not verify';
  if (c.hash !== checkpointHash(body)) return 'hash does not match its content';
  return undefined;
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
