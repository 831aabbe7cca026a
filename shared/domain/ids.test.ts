import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  derivedReferenceId,
  newApiKey,
  newAppId,
  newReferenceId,
  newSecretKey,
  newSiteKey,
  patterns,
  recordNumber,
  recordUuid,
  referenceOfTransaction,
  transactionOfRecord,
  transactionUuid,
  uuidv7,
} from './ids.js';

describe('identifiers', () => {
  it('match their documented formats (docs/api.md)', () => {
    for (let i = 0; i < 200; i++) {
      expect(newAppId()).toMatch(patterns.appId);
      expect(newSiteKey()).toMatch(patterns.siteKey);
      expect(newSecretKey(false)).toMatch(/^svc_sk_[0-9A-Za-z]{40}$/);
      expect(newSecretKey(true)).toMatch(/^svc_sk_test_[0-9A-Za-z]{40}$/);
      expect(newApiKey()).toMatch(patterns.apiKey);
      const ref = newReferenceId();
      expect(ref).toMatch(patterns.referenceId);
      expect(ref.slice(8)).not.toMatch(/[ILOU]/);
    }
  });
  it('uuidv7 carries version 7, the RFC variant and a sortable time prefix', () => {
    const a = uuidv7(1_700_000_000_000);
    const b = uuidv7(1_700_000_000_001);
    expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(a < b).toBe(true);
  });
});

describe('transaction ids that carry their referenceId', () => {
  it('round-trip: the referenceId comes back, the id stays a UUID v7 whose records derive from it', () => {
    for (let i = 0; i < 200; i++) {
      const ref = newReferenceId();
      const t = transactionUuid(1_700_000_000_000 + i, ref);
      expect(t).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{10}00$/);
      expect(referenceOfTransaction(t)).toBe(ref);
      const r = recordUuid(t, 3);
      expect(transactionOfRecord(r)).toBe(t);
      expect(referenceOfTransaction(r)).toBeUndefined();
    }
    for (const ref of ['SVC-REF-00000000', 'SVC-REF-ZZZZZZZZ'])
      expect(referenceOfTransaction(transactionUuid(Date.now(), ref))).toBe(ref);
    // Ids for one principal in one millisecond still differ (26 random bits). 100 of them
    // collide about once in 13,000 runs (1,000 did once in about 130, failing CI).
    const ref = newReferenceId();
    const ids = new Set(Array.from({ length: 100 }, () => transactionUuid(1_700_000_000_000, ref)));
    expect(ids.size).toBe(100);
  });

  it('refuses a referenceId that is not one, and reads none from an id that is not a transaction id', () => {
    expect(() => transactionUuid(Date.now(), 'SVC-REF-0000000I')).toThrow(RangeError);
    expect(() => transactionUuid(Date.now(), 'anything')).toThrow(RangeError);
    expect(referenceOfTransaction('not-a-uuid')).toBeUndefined();
    expect(referenceOfTransaction(uuidv7().replace(/..$/, '5c'))).toBeUndefined();
    // Any transaction-shaped id reads as some referenceId: where to look first, not proof.
    expect(referenceOfTransaction(transactionUuid())).toMatch(patterns.referenceId);
  });
});

describe('record ids derived from the transaction id', () => {
  it('round-trip: every record id names its transaction, and only derived ids do', () => {
    for (let i = 0; i < 100; i++) {
      const t = transactionUuid();
      expect(t).toMatch(patterns.uuid);
      expect(t.endsWith('00')).toBe(true);
      for (const n of [1, 2, 17, 255]) {
        const r = recordUuid(t, n);
        expect(r).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
        expect(r).not.toBe(t);
        expect(transactionOfRecord(r)).toBe(t);
        expect(recordNumber(t, r)).toBe(n);
      }
    }
    const t = transactionUuid();
    expect(transactionOfRecord(t)).toBeUndefined();
    expect(transactionOfRecord('not-a-uuid')).toBeUndefined();
    expect(recordNumber(t, uuidv7())).toBeUndefined();
    expect(recordNumber(uuidv7().replace(/..$/, '5c'), uuidv7())).toBeUndefined();
    expect(() => recordUuid(t, 0)).toThrow(RangeError);
    expect(() => recordUuid(t, 256)).toThrow(RangeError);
  });
});

describe('referenceIds derived from user ids', () => {
  const key = Buffer.alloc(32, 7);

  it('are referenceIds, the same for the same key and user id, others otherwise', () => {
    const a = derivedReferenceId(key, 'user-1');
    expect(a).toMatch(patterns.referenceId);
    expect(derivedReferenceId(key, 'user-1')).toBe(a);
    expect(derivedReferenceId(key, 'user-2')).not.toBe(a);
    expect(derivedReferenceId(Buffer.alloc(32, 8), 'user-1')).not.toBe(a);
  });

  it('take the first 40 bits of HMAC-SHA256(key, user id), five bits a character', () => {
    const mac = createHmac('sha256', key).update('user-1', 'utf8').digest();
    const bits = [...mac.subarray(0, 5)].map((b) => b.toString(2).padStart(8, '0')).join('');
    const alphabet = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
    const expected = Array.from({ length: 8 }, (_, i) =>
      alphabet.charAt(parseInt(bits.slice(i * 5, i * 5 + 5), 2)),
    ).join('');
    expect(derivedReferenceId(key, 'user-1')).toBe(`SVC-REF-${expected}`);
  });

  it('use every character of the alphabet in every position', () => {
    const seen = Array.from({ length: 8 }, () => new Set<string>());
    for (let i = 0; i < 2000; i++) {
      const ref = derivedReferenceId(key, `u${i}`).slice(8);
      [...ref].forEach((c, n) => seen[n]!.add(c));
    }
    for (const s of seen) expect(s.size).toBe(32);
  });
});
