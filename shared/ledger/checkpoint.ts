import type { KeyObject } from 'node:crypto';
import { signFor, verifyFor, type SigningKey } from '../signing/keys.js';
import { canonicalJson, sha256Hex } from '../domain/ledger/hash.js';
import type { Checkpoint, CheckpointBody } from '../domain/ledger/checkpoints.js';

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
