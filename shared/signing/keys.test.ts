import { createPublicKey, generateKeyPairSync, verify } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  keyId,
  keysFromJwks,
  parsePrivateKey,
  parsePublicKey,
  signFor,
  signingKeys,
  verifyFor,
  type KeyConfig,
} from './keys.js';

// RFC 8037 appendix A: an Ed25519 key (A.1), its public part (A.2) and thumbprint (A.3).
const RFC_D = 'nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A';
const RFC_X = '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo';
const RFC_KID = 'kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k';

const config = (over: Partial<KeyConfig> = {}): KeyConfig => ({
  NODE_ENV: 'development',
  SVC_SIGNING_RETIRED_KEYS: '',
  ...over,
});
const tmpFile = () =>
  path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'svc-keys-')), 'sub', 'signing-key');

describe('signing keys', () => {
  it('derives the key and its RFC 7638 id from a configured seed (RFC 8037 vectors)', () => {
    const seedHex = Buffer.from(RFC_D, 'base64url').toString('hex');
    for (const seed of [seedHex, Buffer.from(RFC_D, 'base64url').toString('base64')]) {
      const ring = signingKeys(config({ SVC_SIGNING_KEY: seed }), '/nonexistent/never-read');
      expect(ring.active.kid).toBe(RFC_KID);
      expect(ring.jwks.keys).toEqual([
        {
          kty: 'OKP',
          crv: 'Ed25519',
          x: RFC_X,
          kid: RFC_KID,
          use: 'sig',
          alg: 'EdDSA',
          status: 'active',
        },
      ]);
    }
  });

  it('accepts a PKCS#8 PEM and refuses other keys and garbage', () => {
    const { privateKey } = generateKeyPairSync('ed25519');
    const pem = privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
    expect(parsePrivateKey(pem).asymmetricKeyType).toBe('ed25519');
    // As an environment variable often carries it: one line with literal \n.
    expect(parsePrivateKey(pem.replace(/\n/g, '\\n')).asymmetricKeyType).toBe('ed25519');
    const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({
      format: 'pem',
      type: 'pkcs8',
    });
    expect(() => parsePrivateKey(rsa.toString())).toThrow(/Ed25519/);
    expect(() => parsePrivateKey('not a key')).toThrow(/SVC_SIGNING_KEY/);
  });

  it('generates the development key once, mode 0600, and keeps it across restarts', () => {
    const file = tmpFile();
    const first = signingKeys(config(), file);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    const again = parsePrivateKey(fs.readFileSync(file, 'utf8'));
    expect(keyId(createPublicKey(again))).toBe(first.active.kid);
    expect(signingKeys(config(), file).active.kid).toBe(first.active.kid);
    // Another file: another key.
    expect(signingKeys(config(), tmpFile()).active.kid).not.toBe(first.active.kid);
  });

  it('must be configured in production', () => {
    expect(() => signingKeys(config({ NODE_ENV: 'production' }), tmpFile())).toThrow(
      /SVC_SIGNING_KEY must be set in production/,
    );
  });

  it('publishes retired keys for verification only', () => {
    const old = signingKeys(config({ SVC_SIGNING_KEY: 'a'.repeat(64) }), '/never');
    const ring = signingKeys(
      config({
        SVC_SIGNING_KEY: 'b'.repeat(64),
        SVC_SIGNING_RETIRED_KEYS: ` ${old.jwks.keys[0]!.x} `,
      }),
      '/never',
    );
    expect(ring.jwks.keys.map((k) => [k.kid, k.status])).toEqual([
      [ring.active.kid, 'active'],
      [old.active.kid, 'retired'],
    ]);
    expect([...ring.verifiers.keys()]).toEqual([ring.active.kid, old.active.kid]);
    expect(keyId(parsePublicKey(old.jwks.keys[0]!.x))).toBe(old.active.kid);
  });

  it('signs for one purpose only; any standard Ed25519 verifier checks the framed message', () => {
    const ring = signingKeys(config({ SVC_SIGNING_KEY: 'c'.repeat(64) }), '/never');
    const sig = signFor(ring.active, 'svc-ledger-checkpoint/v1', '{"a":1}');
    const pub = ring.active.publicKey;
    expect(verifyFor(pub, 'svc-ledger-checkpoint/v1', '{"a":1}', sig)).toBe(true);
    expect(verifyFor(pub, 'svc-receipt/v1', '{"a":1}', sig)).toBe(false);
    expect(verifyFor(pub, 'svc-ledger-checkpoint/v1', '{"a":2}', sig)).toBe(false);
    expect(verifyFor(pub, 'svc-ledger-checkpoint/v1', '{"a":1}', 'AAAA')).toBe(false);
    // node:crypto directly, from the published JWK alone.
    const fromJwk = keysFromJwks(ring.jwks).get(ring.active.kid)!;
    const msg = Buffer.from('svc-ledger-checkpoint/v1\n{"a":1}');
    expect(verify(null, msg, fromJwk, Buffer.from(sig, 'base64url'))).toBe(true);
  });

  it('reads a JWK set, recomputing ids: a key listed under another key’s id is ignored', () => {
    const a = signingKeys(config({ SVC_SIGNING_KEY: 'd'.repeat(64) }), '/never').jwks.keys[0]!;
    const b = signingKeys(config({ SVC_SIGNING_KEY: 'e'.repeat(64) }), '/never').jwks.keys[0]!;
    const keys = keysFromJwks({
      keys: [a, { ...b, kid: a.kid }, { kty: 'RSA', n: 'x', e: 'AQAB' }, { ...b, kid: undefined }],
    });
    expect([...keys.keys()].sort()).toEqual([a.kid, b.kid].sort());
    expect(() => keysFromJwks({ nokeys: [] })).toThrow(/JWK set/);
  });
});
