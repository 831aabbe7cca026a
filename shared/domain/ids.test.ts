import { describe, expect, it } from 'vitest';
import {
  newApiKey,
  newAppId,
  newReferenceId,
  newSecretKey,
  newSiteKey,
  patterns,
  recordNumber,
  recordUuid,
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
