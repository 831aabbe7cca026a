import { randomBytes, randomInt } from 'node:crypto';
import { ulid } from 'ulid';

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
export const newEventId = () => `evt_${ulid()}`;
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
