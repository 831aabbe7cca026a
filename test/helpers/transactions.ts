import type { StoredTransaction } from '../../shared/domain/consent/model.js';
import { DAY_MS } from '../../shared/domain/consent/timers.js';

/** The instant every transaction of `aTransaction` was created at. */
export const T0 = Date.parse('2026-01-01T00:00:00.000Z');
export const iso = (ms: number) => new Date(ms).toISOString();

/** A stored transaction created at T0 with one record (`r{i}`, purpose `p{i}`) per state. */
export function aTransaction(
  states: StoredTransaction['records'][number]['state'][],
  validityDays = 365,
): StoredTransaction {
  return {
    appId: 'app_x',
    transactionId: '0190-txn',
    referenceId: 'SVC-REF-00000000',
    processId: null,
    noticeId: null,
    noticeVersion: null,
    language: null,
    source: 'api',
    createdAt: iso(T0),
    updatedAt: iso(T0),
    expiresAt: iso(T0 + validityDays * DAY_MS),
    records: states.map((state, i) => ({
      recordId: `r${i}`,
      purpose: `p${i}`,
      state,
      updatedAt: iso(T0),
    })),
    version: 1,
    sequence: 1,
  };
}
