import { readOrCreateKeyFile } from '../secret-file.js';
import {
  createCipheriv,
  createDecipheriv,
  createHash,
  createHmac,
  hkdfSync,
  randomBytes,
  timingSafeEqual,
} from 'node:crypto';
import path from 'node:path';
import { stackPaths } from '../../infra/local/paths.js';
import { ConfigError, type BaseConfig } from '../config.js';

export function sha256hex(s: string): string {
  return createHash('sha256').update(s, 'utf8').digest('hex');
}

/**
 * Constant-time string equality. Both sides are hashed first so the comparison takes the same
 * time whatever the lengths (timingSafeEqual itself throws on a length mismatch); equal
 * SHA-256 digests mean equal strings.
 */
export function safeEqual(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a, 'utf8').digest();
  const hb = createHash('sha256').update(b, 'utf8').digest();
  return timingSafeEqual(ha, hb);
}

const KEY_BYTES = 32;

/** Parses a 32-byte key given as 64 hex characters or as base64; undefined when it is neither. */
export function parseKey(text: string): Buffer | undefined {
  const t = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(t)) return Buffer.from(t, 'hex');
  if (/^[A-Za-z0-9+/_-]+={0,2}$/.test(t)) {
    const b = Buffer.from(t, 'base64');
    if (b.length === KEY_BYTES) return b;
  }
  return undefined;
}

/** Reads the development key file, creating it first when absent (see `readOrCreateKeyFile`). */
function devKeyFromFile(file: string): Buffer {
  const key = parseKey(readOrCreateKeyFile(file, KEY_BYTES));
  if (!key) throw new ConfigError(`${file} does not hold a 32-byte key (base64 or hex)`);
  return key;
}

/** What the keyring is read from: SVC_ENCRYPTION_KEYS, SVC_ENCRYPTION_KEY, NODE_ENV. */
export type KeyConfig = Pick<BaseConfig, 'SVC_ENCRYPTION_KEY' | 'NODE_ENV'> &
  Partial<Pick<BaseConfig, 'SVC_ENCRYPTION_KEYS'>>;

export interface KeyringKey {
  /** Key id: written into every box sealed with the key (`v2:<kid>:…`). */
  kid: string;
  key: Buffer;
}

/**
 * The encryption keys. `current` seals everything new; every key opens what it sealed.
 * Rotation: put a new key first in SVC_ENCRYPTION_KEYS, reseal (`npm run rekey`), then drop
 * the old key (docs/security.md, "Encryption key rotation").
 */
export interface Keyring {
  current: KeyringKey;
  /** Every key by id, the current one included. */
  keys: ReadonlyMap<string, Buffer>;
  /**
   * Every key by its fingerprint id too: a box sealed under SVC_ENCRYPTION_KEY (id `fp-…`)
   * still opens once that key is listed in SVC_ENCRYPTION_KEYS under a name of its own.
   */
  fingerprints: ReadonlyMap<string, Buffer>;
}

const KID = /^[A-Za-z0-9_-]{1,32}$/;

/** The id of a key given without one (SVC_ENCRYPTION_KEY, the development key file). */
export const fingerprintKid = (key: Buffer) =>
  `fp-${createHash('sha256').update('svc-key-id:').update(key).digest('hex').slice(0, 12)}`;

/** `kid:key,kid:key` (keys base64 or hex), in order; throws ConfigError naming the problem. */
export function parseKeyring(text: string): KeyringKey[] {
  const out: KeyringKey[] = [];
  for (const entry of text
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean)) {
    const at = entry.indexOf(':');
    const kid = entry.slice(0, at);
    const key = at > 0 ? parseKey(entry.slice(at + 1)) : undefined;
    if (at <= 0 || !KID.test(kid))
      throw new ConfigError('SVC_ENCRYPTION_KEYS entries are kid:key, kid of [A-Za-z0-9_-]{1,32}');
    if (!key) throw new ConfigError(`SVC_ENCRYPTION_KEYS: the key of ${kid} is not 32 bytes`);
    if (out.some((k) => k.kid === kid))
      throw new ConfigError(`SVC_ENCRYPTION_KEYS names ${kid} twice`);
    out.push({ kid, key });
  }
  if (out.length === 0) throw new ConfigError('SVC_ENCRYPTION_KEYS lists no key');
  return out;
}

const ringMemo = new Map<string, Keyring>();

/**
 * The keyring: SVC_ENCRYPTION_KEYS (`kid:key,…`, the first is current) and SVC_ENCRYPTION_KEY
 * (one key, id `fp-…` from its fingerprint; when both are set it only opens what it sealed);
 * or outside production a key generated once and kept in the working folder (so restarts can
 * still decrypt).
 */
export function keyring(
  config: KeyConfig,
  keyFile: string = path.join(stackPaths().root, 'encryption-key'),
): Keyring {
  const listed = config.SVC_ENCRYPTION_KEYS;
  const single = config.SVC_ENCRYPTION_KEY;
  const memoKey =
    listed !== undefined || single !== undefined
      ? `env:${listed ?? ''}|${single ?? ''}`
      : `file:${keyFile}`;
  const memo = ringMemo.get(memoKey);
  if (memo) return memo;
  const keys: KeyringKey[] = listed !== undefined ? parseKeyring(listed) : [];
  if (single !== undefined) {
    const key = parseKey(single);
    if (!key) throw new ConfigError('SVC_ENCRYPTION_KEY must be 32 bytes, base64 or hex');
    if (!keys.some((k) => k.key.equals(key))) keys.push({ kid: fingerprintKid(key), key });
  }
  if (keys.length === 0) {
    if (config.NODE_ENV === 'production')
      throw new ConfigError('SVC_ENCRYPTION_KEY or SVC_ENCRYPTION_KEYS must be set in production');
    const key = devKeyFromFile(keyFile);
    keys.push({ kid: fingerprintKid(key), key });
  }
  const ring: Keyring = {
    current: keys[0]!,
    keys: new Map(keys.map((k) => [k.kid, k.key])),
    fingerprints: new Map(keys.map((k) => [fingerprintKid(k.key), k.key])),
  };
  ringMemo.set(memoKey, ring);
  return ring;
}

/** The key new boxes (and new keyed hashes and signatures) are made with, and its id. */
export const currentKey = (config: KeyConfig): KeyringKey => keyring(config).current;

/** The key of `kid`, or undefined when the keyring no longer (or never) held it. */
export function keyById(config: KeyConfig, kid: string): Buffer | undefined {
  const ring = keyring(config);
  return ring.keys.get(kid) ?? ring.fingerprints.get(kid);
}

/** The current key's bytes (kept for callers that need only those). */
export function encryptionKey(config: KeyConfig, keyFile?: string): Buffer {
  return keyring(config, keyFile).current.key;
}

const BOX_VERSION = 'v1';
const KID_BOX_VERSION = 'v2';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * AES-256-GCM. With a key id the box is `v2:<kid>:` + base64url(iv ‖ tag ‖ ciphertext); the
 * older form without one is `v1.` + the same. `aad` (optional) binds the box to its context,
 * e.g. the app id, so a box copied to another item does not decrypt there.
 */
export function encrypt(key: Buffer, plain: string, aad?: string, kid?: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  if (aad !== undefined) cipher.setAAD(Buffer.from(aad, 'utf8'));
  const ct = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  const payload = Buffer.concat([iv, cipher.getAuthTag(), ct]).toString('base64url');
  return kid === undefined ? `${BOX_VERSION}.${payload}` : `${KID_BOX_VERSION}:${kid}:${payload}`;
}

/** The key id and payload of a box; kid undefined for a `v1.` box. */
function unbox(box: string): { kid: string | undefined; payload: string } {
  if (box.startsWith(`${KID_BOX_VERSION}:`)) {
    const [, kid, payload, ...rest] = box.split(':');
    if (kid === undefined || !KID.test(kid) || payload === undefined || rest.length > 0)
      throw new Error('unknown box format');
    return { kid, payload };
  }
  const [version, payload, ...rest] = box.split('.');
  if (version !== BOX_VERSION || payload === undefined || rest.length > 0)
    throw new Error('unknown box format');
  return { kid: undefined, payload };
}

/** Throws when the box was altered, or was made with another key or another `aad`. */
export function decrypt(key: Buffer, box: string, aad?: string): string {
  const raw = Buffer.from(unbox(box).payload, 'base64url');
  if (raw.length < IV_BYTES + TAG_BYTES) throw new Error('box too short');
  const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, IV_BYTES));
  decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  if (aad !== undefined) decipher.setAAD(Buffer.from(aad, 'utf8'));
  return Buffer.concat([
    decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)),
    decipher.final(),
  ]).toString('utf8');
}

/** Encrypts under the current key, naming it in the box. */
export function sealSecret(config: KeyConfig, plain: string, aad?: string): string {
  const { kid, key } = currentKey(config);
  return encrypt(key, plain, aad, kid);
}

/**
 * Decrypts a box sealed under any key of the keyring: the key its id names, or, for a `v1.`
 * box (no id), each key in turn (GCM's tag tells the right one). Throws when no key opens it.
 */
export function openSecret(config: KeyConfig, box: string, aad?: string): string {
  const ring = keyring(config);
  const { kid } = unbox(box);
  if (kid !== undefined) {
    const key = keyById(config, kid);
    if (!key) throw new Error(`no encryption key with id ${kid} (SVC_ENCRYPTION_KEYS)`);
    return decrypt(key, box, aad);
  }
  const order = [
    ring.current.key,
    ...[...ring.keys.values()].filter((k) => k !== ring.current.key),
  ];
  let last: unknown;
  for (const key of order) {
    try {
      return decrypt(key, box, aad);
    } catch (err) {
      last = err;
    }
  }
  throw last instanceof Error ? last : new Error('no key opens this box');
}

/** True when the box is not sealed under the current key (`npm run rekey` reseals it). */
export function needsReseal(config: KeyConfig, box: string): boolean {
  return unbox(box).kid !== currentKey(config).kid;
}

const derivedMemo = new WeakMap<Buffer, Map<string, Buffer>>();

/** A sub-key per purpose (HKDF-SHA256), so one use of the master key never helps attack another. */
export function derivedKey(master: Buffer, purpose: string): Buffer {
  let byPurpose = derivedMemo.get(master);
  if (!byPurpose) derivedMemo.set(master, (byPurpose = new Map<string, Buffer>()));
  let k = byPurpose.get(purpose);
  if (!k) {
    k = Buffer.from(hkdfSync('sha256', master, Buffer.alloc(0), `svc:${purpose}`, KEY_BYTES));
    byPurpose.set(purpose, k);
  }
  return k;
}

/**
 * HMAC-SHA256 (hex) of `value` under a key derived for `purpose` from the current encryption
 * key: pseudonymous, not reversible. After a key rotation it gives other values; one made
 * before is checked with `keyedHashWith(keyById(config, kid), …)`.
 */
export function keyedHash(config: KeyConfig, purpose: string, value: string): string {
  return keyedHashWith(encryptionKey(config), purpose, value);
}

/** `keyedHash` under a given master key (e.g. `keyById`'s). */
export function keyedHashWith(master: Buffer, purpose: string, value: string): string {
  return createHmac('sha256', derivedKey(master, purpose)).update(value, 'utf8').digest('hex');
}
