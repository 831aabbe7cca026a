import { describe, expect, it } from 'vitest';
import { recordUuid, transactionOfRecord, uuidv7 } from '../ids.js';
import { newTransactionId, recordIdsFor } from './writer.js';

describe('recordIdsFor', () => {
  it('numbers a new transaction’s records 1, 2, 3 from its id', () => {
    const t = newTransactionId();
    const next = recordIdsFor(t);
    expect([next(), next(), next()]).toEqual([1, 2, 3].map((n) => recordUuid(t, n)));
  });

  it('numbers on from the highest derived record, ignoring random ones', () => {
    const t = newTransactionId();
    const existing = [recordUuid(t, 1), uuidv7(), recordUuid(t, 4)].map((recordId) => ({
      recordId,
    }));
    const next = recordIdsFor(t, existing);
    expect(next()).toBe(recordUuid(t, 5));
    expect(next()).toBe(recordUuid(t, 6));
  });

  it('gives random ids (found by pointer) to a transaction from before the layout, and past 255', () => {
    const legacy = uuidv7().replace(/..$/, '3f');
    const id = recordIdsFor(legacy)();
    expect(transactionOfRecord(id)).not.toBe(legacy);

    const t = newTransactionId();
    const full = recordIdsFor(t, [{ recordId: recordUuid(t, 255) }]);
    const past = full();
    expect(past).toMatch(/^[0-9a-f-]{36}$/);
    expect(transactionOfRecord(past)).not.toBe(t);
  });
});
