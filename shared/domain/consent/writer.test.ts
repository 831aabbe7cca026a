import { describe, expect, it } from 'vitest';
import { recordUuid, transactionOfRecord } from '../ids.js';
import { newTransactionId, recordIdsFor } from './writer.js';

describe('recordIdsFor', () => {
  it('numbers a new transaction’s records 1, 2, 3 from its id', () => {
    const t = newTransactionId();
    const next = recordIdsFor(t);
    expect([next(), next(), next()]).toEqual([1, 2, 3].map((n) => recordUuid(t, n)));
  });

  it('numbers on from the highest record it holds', () => {
    const t = newTransactionId();
    const existing = [recordUuid(t, 1), recordUuid(t, 4)].map((recordId) => ({ recordId }));
    const next = recordIdsFor(t, existing);
    expect(next()).toBe(recordUuid(t, 5));
    expect(next()).toBe(recordUuid(t, 6));
    expect(transactionOfRecord(recordUuid(t, 6))).toBe(t);
  });

  it('refuses a record past the 255th rather than reuse an id', () => {
    const t = newTransactionId();
    const full = recordIdsFor(t, [{ recordId: recordUuid(t, 255) }]);
    expect(() => full()).toThrow(RangeError);
  });
});
