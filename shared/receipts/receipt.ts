import type { KeyObject } from 'node:crypto';
import type { HistoryEntry, StoredTransaction } from '../domain/consent/model.js';
import { deriveStatus } from '../domain/consent/states.js';
import { historyOf } from '../domain/consent/carried.js';
import type { App, NoticeVersion } from '../domain/types.js';
import { canonicalJson } from '../domain/ledger/hash.js';
import { signFor, verifyFor, type SigningKey } from '../signing/keys.js';

/**
 * Signed consent receipts (docs/receipts.md): what a principal consented to, under which notice,
 * how and when, and every change since, as one JSON document aligned with ISO/IEC TS 27560
 * (consent record information structure), signed with the service's Ed25519 key so that the
 * principal or an auditor can check it offline against `/.well-known/svc-keys.json`. Pure: the
 * store is read by issue.ts.
 *
 * Signature: Ed25519 over the UTF-8 bytes of `svc-consent-receipt/v1` + "\n" + the canonical
 * JSON (RFC 8785, JCS) of the receipt with `proof.signature` left out, so the key id and the
 * other proof fields are signed too.
 */

/** What a receipt signature is for (shared/signing/keys.ts frames every signature with it). */
export const RECEIPT_PURPOSE = 'svc-consent-receipt/v1';

export type ReceiptActor = 'principal' | 'controller' | 'service';

export interface ReceiptPurpose {
  recordId: string;
  purpose: string;
  /** The notice's label of the purpose in the receipt's language, when the notice has one. */
  label?: string;
  /** The personal data the purpose covers, as the notice itemised it. */
  dataItems: string[];
  required: boolean;
  state: string;
  updatedAt: string;
}

export interface ReceiptEvent {
  at: string;
  recordId: string;
  purpose: string;
  operation: string;
  from: string | null;
  to: string;
  /** Who made the change: the principal (widget, portal, dashboard), the app, or the service (expiry). */
  by: ReceiptActor;
  /** Through what: widget, api or portal. */
  via: string;
}

export interface ReceiptProof {
  alg: 'EdDSA';
  /** RFC 7638 thumbprint of the signing key: its `kid` in the published key set. */
  kid: string;
  purpose: typeof RECEIPT_PURPOSE;
  canonicalization: 'RFC8785';
  /** Where the service publishes its public keys. */
  keys: string;
  /** base64url Ed25519 signature; absent from what is signed. */
  signature: string;
}

export interface ConsentReceipt {
  receiptVersion: 1;
  alignedWith: 'ISO/IEC TS 27560:2023';
  issuedAt: string;
  jurisdiction: 'IN';
  lawfulBasis: 'consent';
  transactionId: string;
  referenceId: string;
  /** The Data Fiduciary (PII controller) the consent was given to, and whom to contact. */
  controller: { appId: string; name: string; contact: { email: string } };
  /** The notice shown, with the SHA-256 of its text; null for a record made through the API without one. */
  notice: { noticeId: string; version: number; textHash: string; processId: string | null } | null;
  language: string | null;
  /** ISO 3166-2:IN code of the region the notice was chosen for, when the page named one. */
  region?: string;
  /** When the consent was given (the transaction's creation). */
  collectedAt: string;
  method: { via: string; mode?: 'silent' | 'granular' };
  status: string;
  /**
   * The `data.sequence` of the consent's last event: the receipt attests the state that event
   * announced, and an event with a greater one is newer than the receipt.
   */
  sequence: number;
  expiresAt: string;
  purposes: ReceiptPurpose[];
  /** Every change of the transaction's records, oldest first (creation included). */
  history: ReceiptEvent[];
  proof: ReceiptProof;
}

export type UnsignedReceipt = Omit<ConsentReceipt, 'proof'>;

function actorOf(who: HistoryEntry['who']): ReceiptActor {
  if (who.credential.startsWith('system:')) return 'service';
  return who.source === 'api' ? 'controller' : 'principal';
}

/**
 * The receipt's content for a stored transaction, the notice version it was given under (when
 * it has one and it is still there) and the app. Pure.
 */
export function receiptContent(
  t: StoredTransaction,
  notice: NoticeVersion | undefined,
  app: Pick<App, 'appId' | 'name' | 'contactEmail'>,
  issuedAt: Date,
): UnsignedReceipt {
  const declared = new Map((notice?.purposes ?? []).map((p) => [p.name, p]));
  const words = t.language !== null ? notice?.translations[t.language] : undefined;
  const purposeOf = new Map(t.records.map((r) => [r.recordId, r.purpose]));
  const noticeRef =
    t.noticeId !== null && t.noticeVersion !== null
      ? {
          noticeId: t.noticeId,
          version: t.noticeVersion,
          textHash: t.proof?.textHash ?? notice?.textHash ?? '',
          processId: t.processId,
        }
      : null;
  return {
    receiptVersion: 1,
    alignedWith: 'ISO/IEC TS 27560:2023',
    issuedAt: issuedAt.toISOString(),
    jurisdiction: 'IN',
    lawfulBasis: 'consent',
    transactionId: t.transactionId,
    referenceId: t.referenceId,
    controller: { appId: app.appId, name: app.name, contact: { email: app.contactEmail } },
    notice: noticeRef,
    language: t.language,
    ...(t.proof?.region !== undefined ? { region: t.proof.region } : {}),
    collectedAt: t.createdAt,
    method: { via: t.source, ...(t.proof ? { mode: t.proof.mode } : {}) },
    status: deriveStatus(t.records.map((r) => r.state)),
    sequence: t.sequence,
    expiresAt: t.expiresAt,
    purposes: t.records.map((r) => {
      const p = declared.get(r.purpose);
      const label = words?.purposes[r.purpose]?.label;
      return {
        recordId: r.recordId,
        purpose: r.purpose,
        ...(label !== undefined ? { label } : {}),
        dataItems: p?.dataItems ?? [],
        required: p?.required ?? false,
        state: r.state,
        updatedAt: r.updatedAt,
      };
    }),
    history: historyOf(t).map((h) => ({
      at: h.at,
      recordId: h.recordId,
      purpose: purposeOf.get(h.recordId) ?? '',
      operation: h.operation,
      from: h.from,
      to: h.to,
      by: actorOf(h.who),
      via: h.who.source,
    })),
  };
}

/** The exact text a receipt's signature covers: everything but `proof.signature`, canonical. */
export function signedText(receipt: object): string {
  const { proof, ...rest } = receipt as { proof?: unknown };
  const { signature: _signature, ...unsignedProof } =
    proof !== null && typeof proof === 'object' ? (proof as Record<string, unknown>) : {};
  return canonicalJson({ ...rest, proof: unsignedProof });
}

export function signReceipt(
  key: SigningKey,
  content: UnsignedReceipt,
  keysUrl: string,
): ConsentReceipt {
  const proof: Omit<ReceiptProof, 'signature'> = {
    alg: 'EdDSA',
    kid: key.kid,
    purpose: RECEIPT_PURPOSE,
    canonicalization: 'RFC8785',
    keys: keysUrl,
  };
  const signature = signFor(key, RECEIPT_PURPOSE, signedText({ ...content, proof }));
  return { ...content, proof: { ...proof, signature } };
}

export type ReceiptVerdict =
  { ok: true; kid: string } | { ok: false; reason: string; kid?: string };

/**
 * Whether `receipt` (parsed JSON of any shape) carries a valid signature by one of `keys` (by
 * key id, as `keysFromJwks` reads them from the published key set). Any change to any field
 * after signing, the proof's own fields included, makes it fail.
 */
export function verifyReceipt(
  receipt: unknown,
  keys: ReadonlyMap<string, KeyObject>,
): ReceiptVerdict {
  if (receipt === null || typeof receipt !== 'object' || Array.isArray(receipt))
    return { ok: false, reason: 'not a receipt: expected a JSON object' };
  const proof = (receipt as { proof?: unknown }).proof as Record<string, unknown> | undefined;
  if (proof === null || typeof proof !== 'object')
    return { ok: false, reason: 'the receipt has no proof (it is not signed)' };
  if (proof.alg !== 'EdDSA' || proof.purpose !== RECEIPT_PURPOSE)
    return {
      ok: false,
      reason: `unsupported proof: alg ${String(proof.alg)}, purpose ${String(proof.purpose)}`,
    };
  if (typeof proof.kid !== 'string' || typeof proof.signature !== 'string')
    return { ok: false, reason: 'the proof lacks its kid or signature' };
  const key = keys.get(proof.kid);
  if (!key)
    return {
      ok: false,
      kid: proof.kid,
      reason: `signed with key ${proof.kid}, which is not in the public key set`,
    };
  let text: string;
  try {
    text = signedText(receipt);
  } catch (err) {
    return { ok: false, kid: proof.kid, reason: `cannot canonicalise: ${(err as Error).message}` };
  }
  return verifyFor(key, RECEIPT_PURPOSE, text, proof.signature)
    ? { ok: true, kid: proof.kid }
    : {
        ok: false,
        kid: proof.kid,
        reason: 'the signature does not match the content (a field was changed after signing)',
      };
}
