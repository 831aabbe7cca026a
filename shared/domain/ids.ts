import { createHash, createHmac, randomBytes, randomInt } from 'node:crypto';
import { encodeTime, ulid } from 'ulid';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
/** referenceId alphabet: 0-9A-Z without I, L, O, U (no look-alikes, no accidental words). */
const REF_ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** Unbiased random string over `alphabet` (rejection sampling via crypto.randomInt). */
export function randomString(alphabet: string, length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += alphabet[randomInt(alphabet.length)];
  return out;
}

export const base62 = (n: number) => randomString(BASE62, n);

export const newAppId = () => `app_${base62(20)}`;
export const newSiteKey = () => `APP_${base62(24)}`;
export const newSecretKey = (sandbox: boolean) =>
  `${sandbox ? 'svc_sk_test_' : 'svc_sk_'}${base62(40)}`;
export const newApiKey = () => `svc_ak_${base62(40)}`;
export const newApiKeyId = () => `ak_${ulid()}`;
export const newReferenceId = () => `SVC-REF-${randomString(REF_ALPHABET, 8)}`;

/**
 * The referenceId a user id is first offered in its app: the first 40 bits of HMAC-SHA256 of the
 * user id under the app's reference key (apps.ts, `getReferenceKey`), in the referenceId
 * alphabet. Without the key it reveals nothing of the user id. Two user ids may map to one
 * referenceId; the writer then gives the second a random one and a user pointer item
 * (writer.ts, `createWithPrincipal`).
 */
export function derivedReferenceId(key: Buffer, userId: string): string {
  return referenceOfBits(
    createHmac('sha256', key).update(userId, 'utf8').digest().readUIntBE(0, 5),
  );
}

/** A referenceId from 40 bits (0 ≤ n < 2^40): 8 characters of the referenceId alphabet. */
function referenceOfBits(bits: number): string {
  let n = bits;
  let out = '';
  for (let i = 0; i < 8; i++) {
    out = REF_ALPHABET[n % 32]! + out;
    n = Math.floor(n / 32);
  }
  return `SVC-REF-${out}`;
}
export const newEventId = () => `evt_${ulid()}`;

/**
 * The `n`th event id of a change that its stored item names (`seed`, e.g. a transaction id):
 * `evt_` + a ULID whose time part is `ms` and whose 80 random bits are the first 80 bits of
 * SHA-256 of `{seed}#{n}`. The same change always yields the same ids, so its events can be
 * rebuilt from the item (consent/carried.ts) and a copy is one event to every consumer, which
 * deduplicate by id.
 */
export function derivedEventId(seed: string, n: number, ms: number): string {
  return `evt_${encodeTime(ms, 10)}${hashedUlidRandom(`${seed}#${n}`)}`;
}

/**
 * How many of a transaction's creation event ids a reader tries (`creationEventIds`): a creation
 * emits at most three events (`consent.created`, `consent.granted`, and
 * `consent.parental_verification_required`: consent/events.ts), one spare.
 */
export const CREATION_EVENT_PLACES = 4;

/**
 * The ids a transaction's creation events can have (consent/carried.ts, `creationIds`): its id
 * as the seed, its `createdAt` as the time, places 0 to `CREATION_EVENT_PLACES - 1`. Those it did
 * not emit name no event.
 */
export function creationEventIds(transactionId: string, createdAtMs: number): string[] {
  return Array.from({ length: CREATION_EVENT_PLACES }, (_, n) =>
    derivedEventId(transactionId, n, createdAtMs),
  );
}

/**
 * The random part of a ULID (16 characters, 80 bits) taken from SHA-256 of `text`, in Crockford's
 * base 32 (which is the referenceId alphabet).
 */
export function hashedUlidRandom(text: string): string {
  const h = createHash('sha256').update(text).digest();
  let bits = 0n;
  for (let i = 0; i < 10; i++) bits = (bits << 8n) | BigInt(h[i]!);
  let rand = '';
  for (let i = 15; i >= 0; i--) rand += REF_ALPHABET[Number((bits >> BigInt(i * 5)) & 31n)];
  return rand;
}
export const newDispatchId = () => `dsp_${ulid()}`;
export const newNoticeId = () => `ntc_${ulid()}`;

/** UUID v7: 48-bit Unix ms timestamp, version 7, variant 10, random rest (RFC 9562). */
export function uuidv7(nowMs = Date.now()): string {
  const b = randomBytes(16);
  b.writeUIntBE(nowMs, 0, 6);
  b[6] = (b[6]! & 0x0f) | 0x70;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/**
 * A transaction id: a UUID v7 whose last byte is 00. Its n-th record (n 1–255) has the same id
 * with last byte n (`recordUuid`; `transactionOfRecord` inverts it), so a record's transaction
 * is found from the record id alone. Given its principal's referenceId, the id also carries it
 * (bytes 10–14, 40 bits; 26 random bits stay beside the millisecond), so the transaction is
 * read by id with one GetItem and needs no index (`referenceOfTransaction`).
 */
export function transactionUuid(nowMs = Date.now(), referenceId?: string): string {
  const t = `${uuidv7(nowMs).slice(0, 34)}00`;
  if (referenceId === undefined) return t;
  if (!patterns.referenceId.test(referenceId)) throw new RangeError(`referenceId ${referenceId}`);
  let n = 0;
  for (const c of referenceId.slice(8)) n = n * 32 + REF_ALPHABET.indexOf(c);
  // Bytes 10–14 (hex 24–33): the referenceId's 40 bits; byte 15 stays 00 for the record number.
  return `${t.slice(0, 24)}${n.toString(16).padStart(10, '0')}00`;
}

/**
 * The referenceId a transaction id carries (`transactionUuid` with a referenceId): bytes 10–14
 * read as a referenceId. Any transaction-shaped id reads as one, so this names where the
 * transaction would be, never proof that it is there (repository.ts, `loadTransaction`).
 */
export function referenceOfTransaction(transactionId: string): string | undefined {
  if (!patterns.uuid.test(transactionId) || !transactionId.endsWith('00')) return undefined;
  return referenceOfBits(parseInt(transactionId.slice(24, 34), 16));
}

export function recordUuid(transactionId: string, n: number): string {
  if (!Number.isInteger(n) || n < 1 || n > 255) throw new RangeError(`record number ${n}`);
  return `${transactionId.slice(0, 34)}${n.toString(16).padStart(2, '0')}`;
}

/** The transaction id a record id was derived from; undefined when it cannot be one. */
export function transactionOfRecord(recordId: string): string | undefined {
  if (!patterns.uuid.test(recordId) || recordId.endsWith('00')) return undefined;
  return `${recordId.slice(0, 34)}00`;
}

/** The number n of a record id derived from `transactionId`, or undefined. */
export function recordNumber(transactionId: string, recordId: string): number | undefined {
  if (!transactionId.endsWith('00') || transactionOfRecord(recordId) !== transactionId)
    return undefined;
  return parseInt(recordId.slice(34), 16);
}

export const patterns = {
  appId: /^app_[0-9A-Za-z]{20}$/,
  siteKey: /^APP_[0-9A-Za-z]{24}$/,
  secretKey: /^svc_sk_(test_)?[0-9A-Za-z]{40}$/,
  apiKey: /^svc_ak_[0-9A-Za-z]{40}$/,
  referenceId: /^SVC-REF-[0-9A-HJKMNP-TV-Z]{8}$/,
  uuid: /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i,
  dispatchId: /^dsp_[0-9A-HJKMNP-TV-Z]{26}$/,
  /**
   * `constructor` is reserved: as a key it shadows Object.prototype.constructor, which the
   * DynamoDB marshaller reads to tell a plain object from a class instance.
   */
  purpose: /^(?!constructor$)[a-z][a-z0-9_]{0,63}$/,
  triggerKey: /^[a-z0-9]+(_[a-z0-9]+)*$/,
};
