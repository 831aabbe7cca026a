import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../config.js';
import {
  currentKey,
  decrypt,
  encrypt,
  encryptionKey,
  fingerprintKid,
  keyById,
  keyedHash,
  keyedHashWith,
  keyring,
  needsReseal,
  openSecret,
  parseKey,
  parseKeyring,
  safeEqual,
  sealSecret,
  sha256hex,
} from './crypto.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-crypto-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

const key = randomBytes(32);

describe('sha256hex and safeEqual', () => {
  it('hashes to the known digest', () => {
    expect(sha256hex('abc')).toBe(
      'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
    );
  });

  it.each([
    ['same', 'same', true],
    ['same', 'Same', false],
    ['short', 'shorter', false],
    ['', '', true],
    ['', 'x', false],
  ])('safeEqual(%j, %j) is %s', (a, b, want) => {
    expect(safeEqual(a, b)).toBe(want);
  });
});

describe('encrypt / decrypt (AES-256-GCM)', () => {
  it('round-trips and never contains the plain text', () => {
    const box = encrypt(key, 'svc_sk_secret-value', 'app:1');
    expect(box.startsWith('v1.')).toBe(true);
    expect(box).not.toContain('secret-value');
    expect(decrypt(key, box, 'app:1')).toBe('svc_sk_secret-value');
  });

  it('uses a fresh IV each time', () => {
    expect(encrypt(key, 'x')).not.toBe(encrypt(key, 'x'));
  });

  it('detects a changed byte anywhere in the box', () => {
    const box = encrypt(key, 'hello world');
    const raw = Buffer.from(box.slice(3), 'base64url');
    for (const i of [0, 12, 28, raw.length - 1]) {
      const bad = Buffer.from(raw);
      bad[i] = bad[i]! ^ 1;
      expect(() => decrypt(key, `v1.${bad.toString('base64url')}`)).toThrow();
    }
  });

  it('refuses another key, another context and unknown formats', () => {
    const box = encrypt(key, 'hello', 'app:1');
    expect(() => decrypt(randomBytes(32), box, 'app:1')).toThrow();
    expect(() => decrypt(key, box, 'app:2')).toThrow();
    expect(() => decrypt(key, box)).toThrow();
    expect(() => decrypt(key, box.replace('v1.', 'v9.'))).toThrow(/format/);
    expect(() => decrypt(key, 'v1.AAAA')).toThrow(/short/);
  });
});

describe('encryptionKey', () => {
  const hex = randomBytes(32).toString('hex');
  const b64 = randomBytes(32).toString('base64');

  it('parses hex and base64 and nothing else', () => {
    expect(parseKey(hex)?.toString('hex')).toBe(hex);
    expect(parseKey(b64)?.toString('base64')).toBe(b64);
    expect(parseKey(randomBytes(16).toString('base64'))).toBeUndefined();
    expect(parseKey('not a key!')).toBeUndefined();
  });

  it('uses SVC_ENCRYPTION_KEY when set, in any environment', () => {
    const file = path.join(tmp, 'unused');
    expect(
      encryptionKey({ SVC_ENCRYPTION_KEY: hex, NODE_ENV: 'production' }, file).toString('hex'),
    ).toBe(hex);
    expect(fs.existsSync(file)).toBe(false);
  });

  it('rejects a malformed key and a missing key in production', () => {
    expect(() => encryptionKey({ SVC_ENCRYPTION_KEY: 'short', NODE_ENV: 'development' })).toThrow(
      ConfigError,
    );
    expect(() => encryptionKey({ NODE_ENV: 'production' }, path.join(tmp, 'prod-key'))).toThrow(
      /production/,
    );
    expect(fs.existsSync(path.join(tmp, 'prod-key'))).toBe(false);
  });

  it('outside production creates a private key file once and keeps using it', () => {
    const file = path.join(tmp, 'nested', 'encryption-key');
    const k1 = encryptionKey({ NODE_ENV: 'development' }, file);
    expect(k1.length).toBe(32);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(parseKey(fs.readFileSync(file, 'utf8'))?.equals(k1)).toBe(true);
    expect(encryptionKey({ NODE_ENV: 'test' }, file).equals(k1)).toBe(true);
    expect(fs.readdirSync(path.dirname(file))).toEqual(['encryption-key']);
  });

  it('reads a key file another process wrote', () => {
    const file = path.join(tmp, 'existing-key');
    fs.writeFileSync(file, `${hex}\n`);
    expect(encryptionKey({ NODE_ENV: 'development' }, file).toString('hex')).toBe(hex);
  });
});

describe('keyedHash', () => {
  const config = { SVC_ENCRYPTION_KEY: randomBytes(32).toString('hex'), NODE_ENV: 'test' };
  it('is stable per purpose and separates purposes and keys', () => {
    const h = keyedHash(config, 'ip', '203.0.113.7');
    expect(h).toMatch(/^[0-9a-f]{64}$/);
    expect(keyedHash(config, 'ip', '203.0.113.7')).toBe(h);
    expect(keyedHash(config, 'ip', '203.0.113.8')).not.toBe(h);
    expect(keyedHash(config, 'other', '203.0.113.7')).not.toBe(h);
    const other = { ...config, SVC_ENCRYPTION_KEY: randomBytes(32).toString('hex') };
    expect(keyedHash(other, 'ip', '203.0.113.7')).not.toBe(h);
  });
});

describe('keyring (SVC_ENCRYPTION_KEYS)', () => {
  const a = randomBytes(32);
  const b = randomBytes(32);
  const ring = (env: Record<string, string | undefined>) =>
    keyring({ NODE_ENV: 'production', SVC_ENCRYPTION_KEY: undefined, ...env });

  it('takes the first key as current and finds every key by id', () => {
    const env = { SVC_ENCRYPTION_KEYS: `new:${b.toString('base64')}, old:${a.toString('hex')}` };
    expect(currentKey({ NODE_ENV: 'test', ...env })).toEqual({ kid: 'new', key: b });
    expect(keyById({ NODE_ENV: 'test', ...env }, 'old')?.equals(a)).toBe(true);
    expect(keyById({ NODE_ENV: 'test', ...env }, 'gone')).toBeUndefined();
  });

  it('keeps SVC_ENCRYPTION_KEY working alone, under a fingerprint id', () => {
    const r = ring({ SVC_ENCRYPTION_KEY: a.toString('base64') });
    expect(r.current.key.equals(a)).toBe(true);
    expect(r.current.kid).toBe(fingerprintKid(a));
    expect(r.current.kid).toMatch(/^fp-[0-9a-f]{12}$/);
  });

  it('with both set, SVC_ENCRYPTION_KEY only opens', () => {
    const r = ring({
      SVC_ENCRYPTION_KEYS: `new:${b.toString('base64')}`,
      SVC_ENCRYPTION_KEY: a.toString('base64'),
    });
    expect(r.current.kid).toBe('new');
    expect([...r.keys.keys()]).toEqual(['new', fingerprintKid(a)]);
  });

  it.each([
    ['nokid', /kid:key/],
    [`bad kid!:${a.toString('base64')}`, /kid:key/],
    ['k1:c2hvcnQ=', /not 32 bytes/],
    [`k1:${a.toString('base64')},k1:${b.toString('base64')}`, /twice/],
  ])('refuses %s', (text, why) => {
    expect(() => parseKeyring(text)).toThrow(why);
    expect(() => parseKeyring(text)).toThrow(ConfigError);
  });
});

describe('sealSecret / openSecret', () => {
  const a = randomBytes(32);
  const b = randomBytes(32);
  const old = { NODE_ENV: 'test', SVC_ENCRYPTION_KEY: a.toString('base64') };
  const rotated = {
    NODE_ENV: 'test',
    SVC_ENCRYPTION_KEY: undefined,
    SVC_ENCRYPTION_KEYS: `k2:${b.toString('base64')},k1:${a.toString('base64')}`,
  };
  const after = { NODE_ENV: 'test', SVC_ENCRYPTION_KEYS: `k2:${b.toString('base64')}` };

  it('names the key in the box', () => {
    const box = sealSecret(rotated, 'svc_sk_secret', 'app:1');
    expect(box).toMatch(/^v2:k2:[A-Za-z0-9_-]+$/);
    expect(openSecret(rotated, box, 'app:1')).toBe('svc_sk_secret');
    expect(openSecret(after, box, 'app:1')).toBe('svc_sk_secret');
    expect(() => openSecret(rotated, box, 'app:2')).toThrow();
  });

  it('still opens old values: v1 boxes (no key id) and boxes of a retired key', () => {
    const v1 = encrypt(a, 'svc_sk_old', 'app:1');
    expect(v1.startsWith('v1.')).toBe(true);
    expect(openSecret(old, v1, 'app:1')).toBe('svc_sk_old');
    expect(openSecret(rotated, v1, 'app:1')).toBe('svc_sk_old');
    const underA = sealSecret(old, 'svc_sk_a', 'app:1');
    expect(underA.startsWith(`v2:${fingerprintKid(a)}:`)).toBe(true);
    // The old key listed in the keyring under a name of its own still opens what it sealed
    // as SVC_ENCRYPTION_KEY (by its fingerprint id)...
    expect(openSecret(rotated, underA, 'app:1')).toBe('svc_sk_a');
    // ...and so does SVC_ENCRYPTION_KEY kept beside the keyring.
    const beside = {
      NODE_ENV: 'test',
      SVC_ENCRYPTION_KEY: a.toString('base64'),
      SVC_ENCRYPTION_KEYS: `k2:${b.toString('base64')}`,
    };
    expect(openSecret(beside, underA, 'app:1')).toBe('svc_sk_a');
    expect(currentKey(beside).kid).toBe('k2');
  });

  it('says which key is missing once a key is dropped', () => {
    const underA = sealSecret(old, 'svc_sk_a', 'app:1');
    expect(() => openSecret(after, underA, 'app:1')).toThrow(/no encryption key with id fp-/);
    expect(() => openSecret(after, encrypt(a, 'x', 'app:1'), 'app:1')).toThrow();
  });

  it('needsReseal: anything not sealed under the current key', () => {
    expect(needsReseal(rotated, sealSecret(old, 'x'))).toBe(true);
    expect(needsReseal(rotated, encrypt(b, 'x'))).toBe(true);
    expect(needsReseal(rotated, sealSecret(rotated, 'x'))).toBe(false);
  });

  it('keyedHash follows the current key; keyedHashWith checks an older one', () => {
    const before = keyedHash(old, 'user', 'u-1');
    expect(keyedHash(rotated, 'user', 'u-1')).not.toBe(before);
    expect(keyedHashWith(keyById(rotated, fingerprintKid(a))!, 'user', 'u-1')).toBe(before);
  });
});
