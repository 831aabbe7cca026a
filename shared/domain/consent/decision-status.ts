import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { derivedKey, keyring, type KeyConfig } from '../crypto.js';
import type { ConsentStore } from './store.js';
import { deriveStatus } from './states.js';

/**
 * Status tokens (docs/widget-status.md): what a widget capture hands the browser so it can
 * later ask whether its decision still stands without a principal token. `svc_st_` + base64url(iv ‖ tag ‖ AES-256-GCM(transaction id)) under a key
 * derived from the encryption key for this use alone, the app id as associated data: opaque
 * (the transaction id, which names its principal, is not readable in it), unforgeable, and
 * valid only for the app it was minted for. Opened under every key of the keyring, so a key
 * rotation keeps old tokens working until the old key is dropped.
 */

export const STATUS_TOKEN_PREFIX = 'svc_st_';
const PURPOSE = 'widget-status-token';
const IV_BYTES = 12;
const TAG_BYTES = 16;
const ID_BYTES = 16;
/** The exact token: prefix and 44 bytes in base64url (no padding). */
export const STATUS_TOKEN = /^svc_st_[A-Za-z0-9_-]{59}$/;

export function mintStatusToken(config: KeyConfig, appId: string, transactionId: string): string {
  const id = Buffer.from(transactionId.replace(/-/g, ''), 'hex');
  if (id.length !== ID_BYTES) throw new RangeError(`not a transaction id: ${transactionId}`);
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv(
    'aes-256-gcm',
    derivedKey(keyring(config).current.key, PURPOSE),
    iv,
  );
  cipher.setAAD(Buffer.from(appId, 'utf8'));
  const ct = Buffer.concat([cipher.update(id), cipher.final()]);
  return STATUS_TOKEN_PREFIX + Buffer.concat([iv, cipher.getAuthTag(), ct]).toString('base64url');
}

/** The transaction id a token names for `appId`; undefined for anything else. */
export function openStatusToken(
  config: KeyConfig,
  appId: string,
  token: string,
): string | undefined {
  if (!STATUS_TOKEN.test(token)) return undefined;
  const raw = Buffer.from(token.slice(STATUS_TOKEN_PREFIX.length), 'base64url');
  const ring = keyring(config);
  for (const master of new Set([ring.current.key, ...ring.keys.values()])) {
    try {
      const decipher = createDecipheriv(
        'aes-256-gcm',
        derivedKey(master, PURPOSE),
        raw.subarray(0, IV_BYTES),
      );
      decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
      decipher.setAAD(Buffer.from(appId, 'utf8'));
      const hex = Buffer.concat([
        decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)),
        decipher.final(),
      ]).toString('hex');
      return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
    } catch {
      // Not this key (or not a token of this app): GCM's tag tells.
    }
  }
  return undefined;
}

/** Why a decision no longer stands: the same words for every way it happened. */
export type EndedReason = 'withdrawn' | 'erased' | 'expired';
export type DecisionStatus = { live: true } | { live: false; reason: EndedReason };

/**
 * Whether a widget decision still stands: its transaction is `active` or `pending` and within
 * its validity window. Withdrawing any purpose (`revoked`, `partially_revoked`) ends it, as
 * do erasure and expiry (the window's end counts before the expiry timer has run). One read
 * of the transaction; undefined when there is none.
 */
export async function decisionStatus(
  store: Pick<ConsentStore, 'loadTransaction'>,
  appId: string,
  transactionId: string,
  nowMs: number,
): Promise<DecisionStatus | undefined> {
  const t = await store.loadTransaction(appId, transactionId);
  if (!t) return undefined;
  const status = deriveStatus(t.records.map((r) => r.state));
  if (status === 'erased') return { live: false, reason: 'erased' };
  if (status === 'expired' || Date.parse(t.expiresAt) <= nowMs)
    return { live: false, reason: 'expired' };
  if (status === 'revoked' || status === 'partially_revoked')
    return { live: false, reason: 'withdrawn' };
  return { live: true };
}
