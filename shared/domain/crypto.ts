import {
  createCipheriv,
  createDecipheriv,
  createHash,
  createHmac,
  hkdfSync,
  randomBytes,
  timingSafeEqual,
} from 'node:crypto';
import fs from 'node:fs';
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

/**
 * Reads the development key file, creating it first when absent. Creation is a write to a
 * private temp file then a hard link, so two processes starting together agree on one key and
 * neither ever reads a half-written file.
 */
function devKeyFromFile(file: string): Buffer {
  try {
    const key = parseKey(fs.readFileSync(file, 'utf8'));
    if (!key) throw new ConfigError(`${file} does not hold a 32-byte key (base64 or hex)`);
    return key;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  fs.writeFileSync(tmp, `${randomBytes(KEY_BYTES).toString('base64')}\n`, { mode: 0o600 });
  try {
    fs.linkSync(tmp, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    fs.rmSync(tmp, { force: true });
  }
  return devKeyFromFile(file);
}

const keyMemo = new Map<string, Buffer>();

/**
 * The 32-byte key for encrypting secrets at rest: SVC_ENCRYPTION_KEY, or outside production a
 * key generated once and kept in the working folder (so restarts can still decrypt).
 */
export function encryptionKey(
  config: Pick<BaseConfig, 'SVC_ENCRYPTION_KEY' | 'NODE_ENV'>,
  keyFile: string = path.join(stackPaths().root, 'encryption-key'),
): Buffer {
  const configured = config.SVC_ENCRYPTION_KEY;
  const memoKey = configured !== undefined ? `env:${configured}` : `file:${keyFile}`;
  const memo = keyMemo.get(memoKey);
  if (memo) return memo;
  let key: Buffer;
  if (configured !== undefined) {
    const parsed = parseKey(configured);
    if (!parsed) throw new ConfigError('SVC_ENCRYPTION_KEY must be 32 bytes, base64 or hex');
    key = parsed;
  } else if (config.NODE_ENV === 'production') {
    throw new ConfigError('SVC_ENCRYPTION_KEY must be set in production');
  } else {
    key = devKeyFromFile(keyFile);
  }
  keyMemo.set(memoKey, key);
  return key;
}

const BOX_VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * AES-256-GCM. The box is `v1.` + base64url(iv ‖ tag ‖ ciphertext). `aad` (optional) binds the
 * box to its context, e.g. the app id, so a box copied to another item does not decrypt there.
 */
export function encrypt(key: Buffer, plain: string, aad?: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  if (aad !== undefined) cipher.setAAD(Buffer.from(aad, 'utf8'));
  const ct = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return `${BOX_VERSION}.${Buffer.concat([iv, cipher.getAuthTag(), ct]).toString('base64url')}`;
}

/** Throws when the box was altered, or was made with another key or another `aad`. */
export function decrypt(key: Buffer, box: string, aad?: string): string {
  const [version, payload] = box.split('.');
  if (version !== BOX_VERSION || payload === undefined) throw new Error('unknown box format');
  const raw = Buffer.from(payload, 'base64url');
  if (raw.length < IV_BYTES + TAG_BYTES) throw new Error('box too short');
  const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, IV_BYTES));
  decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  if (aad !== undefined) decipher.setAAD(Buffer.from(aad, 'utf8'));
  return Buffer.concat([
    decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)),
    decipher.final(),
  ]).toString('utf8');
}

const derivedMemo = new WeakMap<Buffer, Map<string, Buffer>>();

/** A sub-key per purpose (HKDF-SHA256), so one use of the master key never helps attack another. */
function derivedKey(master: Buffer, purpose: string): Buffer {
  let byPurpose = derivedMemo.get(master);
  if (!byPurpose) derivedMemo.set(master, (byPurpose = new Map()));
  let k = byPurpose.get(purpose);
  if (!k) {
    k = Buffer.from(hkdfSync('sha256', master, Buffer.alloc(0), `svc:${purpose}`, KEY_BYTES));
    byPurpose.set(purpose, k);
  }
  return k;
}

/** HMAC-SHA256 (hex) of `value` under a key derived for `purpose`: pseudonymous, not reversible. */
export function keyedHash(
  config: Pick<BaseConfig, 'SVC_ENCRYPTION_KEY' | 'NODE_ENV'>,
  purpose: string,
  value: string,
): string {
  return createHmac('sha256', derivedKey(encryptionKey(config), purpose))
    .update(value, 'utf8')
    .digest('hex');
}
