import { readOrCreateKeyFile } from '../secret-file.js';
import {
  createHash,
  createPrivateKey,
  createPublicKey,
  sign,
  verify,
  type KeyObject,
} from 'node:crypto';
import path from 'node:path';
import { stackPaths } from '../../infra/local/paths.js';
import { ConfigError, type BaseConfig } from '../config.js';

/**
 * The service's Ed25519 signing key (docs/security.md, Ledger checkpoints): it signs ledger
 * checkpoints and consent receipts (shared/receipts). Public keys are published at
 * `/.well-known/svc-keys.json` as a JWK set (RFC 8037 `OKP`/`Ed25519`), each under its key id, the
 * RFC 7638 thumbprint of the key: the same key always has the same id, in every process.
 *
 * Where the key comes from: `SVC_SIGNING_KEY` (a 32-byte seed, hex or base64, or a PKCS#8
 * PEM), required in production; otherwise a seed generated once and kept in the git-ignored
 * working folder (`.svc/signing-key`, mode 0600), so checkpoints signed before a restart stay
 * verifiable. After a rotation the old public keys stay published through
 * `SVC_SIGNING_RETIRED_KEYS`, so what they signed can still be checked.
 *
 * Every signature covers `{purpose}\n{message}`: a signature made for one purpose (a ledger
 * checkpoint) can never be presented as one for another (a consent receipt).
 */

/** Where the public keys are served (services/keys), relative to PUBLIC_BASE_URL. */
export const KEYS_PATH = '/.well-known/svc-keys.json';

export type KeyConfig = Pick<
  BaseConfig,
  'SVC_SIGNING_KEY' | 'SVC_SIGNING_RETIRED_KEYS' | 'NODE_ENV'
>;

export interface PublicJwk {
  kty: 'OKP';
  crv: 'Ed25519';
  x: string;
  kid: string;
  use: 'sig';
  alg: 'EdDSA';
  /** `active` signs now; `retired` only verifies what it signed before a rotation. */
  status: 'active' | 'retired';
}

export interface KeySet {
  keys: PublicJwk[];
}

export interface SigningKey {
  kid: string;
  privateKey: KeyObject;
  publicKey: KeyObject;
}

export interface KeyRing {
  /** The key new signatures are made with. */
  active: SigningKey;
  /** Every key a signature may be checked against (active and retired), by key id. */
  verifiers: ReadonlyMap<string, KeyObject>;
  /** The document served at `/.well-known/svc-keys.json`. */
  jwks: KeySet;
}

const SEED_BYTES = 32;
// DER prefix of a PKCS#8 Ed25519 private key; the 32-byte seed follows it.
const PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
// DER prefix of an SPKI Ed25519 public key; the 32-byte key follows it.
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

function parseSeed(text: string): Buffer | undefined {
  const t = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(t)) return Buffer.from(t, 'hex');
  if (/^[A-Za-z0-9+/_-]+={0,2}$/.test(t)) {
    const b = Buffer.from(t, 'base64');
    if (b.length === SEED_BYTES) return b;
  }
  return undefined;
}

/** An Ed25519 private key from a 32-byte seed (hex or base64) or a PKCS#8 PEM. */
export function parsePrivateKey(text: string, name = 'SVC_SIGNING_KEY'): KeyObject {
  const seed = parseSeed(text);
  let key: KeyObject;
  try {
    key = seed
      ? createPrivateKey({
          key: Buffer.concat([PKCS8_PREFIX, seed]),
          format: 'der',
          type: 'pkcs8',
        })
      : createPrivateKey(text.replace(/\\n/g, '\n'));
  } catch {
    throw new ConfigError(`${name} must be a 32-byte seed (hex or base64) or a PKCS#8 PEM`);
  }
  if (key.asymmetricKeyType !== 'ed25519') throw new ConfigError(`${name} must be an Ed25519 key`);
  return key;
}

/** An Ed25519 public key from its 32 raw bytes (base64url, base64 or hex). */
export function parsePublicKey(text: string): KeyObject {
  const seedLike = parseSeed(text);
  if (!seedLike) throw new ConfigError(`not a 32-byte Ed25519 public key: ${text.slice(0, 12)}…`);
  return createPublicKey({
    key: Buffer.concat([SPKI_PREFIX, seedLike]),
    format: 'der',
    type: 'spki',
  });
}

/** The raw 32 bytes of an Ed25519 public key, base64url (the JWK `x`). */
export function rawPublicKey(key: KeyObject): string {
  const jwk = key.export({ format: 'jwk' });
  if (typeof jwk.x !== 'string') throw new Error('not an Ed25519 public key');
  return jwk.x;
}

/** RFC 7638 JWK thumbprint (SHA-256, base64url) of an Ed25519 public key: its key id. */
export function keyId(key: KeyObject): string {
  const canonical = `{"crv":"Ed25519","kty":"OKP","x":"${rawPublicKey(key)}"}`;
  return createHash('sha256').update(canonical, 'utf8').digest('base64url');
}

export function publicJwk(key: KeyObject, status: PublicJwk['status']): PublicJwk {
  return {
    kty: 'OKP',
    crv: 'Ed25519',
    x: rawPublicKey(key),
    kid: keyId(key),
    use: 'sig',
    alg: 'EdDSA',
    status,
  };
}

/**
 * The development seed file, created on first use. Creation writes a private temp file and
 * hard-links it into place, so two processes starting together agree on one key and neither
 * reads a half-written file.
 */
function seedFromFile(file: string): KeyObject {
  return parsePrivateKey(readOrCreateKeyFile(file, SEED_BYTES), file);
}

const memo = new Map<string, KeyRing>();

/** The process's key ring (read once per configuration; reading the dev file is I/O). */
export function signingKeys(
  config: KeyConfig,
  keyFile: string = path.join(stackPaths().root, 'signing-key'),
): KeyRing {
  const configured = config.SVC_SIGNING_KEY;
  const memoKey = `${configured !== undefined ? `env:${configured}` : `file:${keyFile}`}|${config.SVC_SIGNING_RETIRED_KEYS}`;
  const known = memo.get(memoKey);
  if (known) return known;
  let privateKey: KeyObject;
  if (configured !== undefined) privateKey = parsePrivateKey(configured);
  else if (config.NODE_ENV === 'production')
    throw new ConfigError('SVC_SIGNING_KEY must be set in production');
  else privateKey = seedFromFile(keyFile);
  const publicKey = createPublicKey(privateKey);
  const active: SigningKey = { kid: keyId(publicKey), privateKey, publicKey };
  const retired = config.SVC_SIGNING_RETIRED_KEYS.split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map(parsePublicKey)
    .filter((k) => keyId(k) !== active.kid);
  const verifiers = new Map<string, KeyObject>([[active.kid, publicKey]]);
  for (const k of retired) verifiers.set(keyId(k), k);
  const ring: KeyRing = {
    active,
    verifiers,
    jwks: {
      keys: [publicJwk(publicKey, 'active'), ...retired.map((k) => publicJwk(k, 'retired'))],
    },
  };
  memo.set(memoKey, ring);
  return ring;
}

/** Public keys by key id from a JWK set (the well-known document); other key types are skipped. */
export function keysFromJwks(doc: unknown): Map<string, KeyObject> {
  const out = new Map<string, KeyObject>();
  const keys = (doc as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys)) throw new Error('not a JWK set: no "keys" array');
  for (const k of keys as Record<string, unknown>[]) {
    if (k?.kty !== 'OKP' || k.crv !== 'Ed25519' || typeof k.x !== 'string') continue;
    const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: k.x }, format: 'jwk' });
    // The id is recomputed, never taken on trust: a key listed under another key's id is ignored.
    const kid = keyId(key);
    if (typeof k.kid === 'string' && k.kid !== kid) continue;
    out.set(kid, key);
  }
  return out;
}

const framed = (purpose: string, message: string) => Buffer.from(`${purpose}\n${message}`, 'utf8');

/** Ed25519 signature (base64url) of `message` for `purpose`. */
export function signFor(key: SigningKey, purpose: string, message: string): string {
  return sign(null, framed(purpose, message), key.privateKey).toString('base64url');
}

/** True when `signature` is `key`'s signature of `message` for `purpose`. */
export function verifyFor(
  key: KeyObject,
  purpose: string,
  message: string,
  signature: string,
): boolean {
  try {
    return verify(null, framed(purpose, message), key, Buffer.from(signature, 'base64url'));
  } catch {
    return false;
  }
}
