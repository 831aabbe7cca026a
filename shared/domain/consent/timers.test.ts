import { describe, expect, it } from 'vitest';
import type { RecordChange, StoredTransaction } from './model.js';
import { DAY_MS, completesErasure, expiryInstants } from './timers.js';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();

function txn(states: StoredTransaction['records'][number]['state'][], validityDays = 365) {
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
  } satisfies StoredTransaction;
}

describe('expiryInstants', () => {
  it.each([
    [
      'live app: 30 days before a 365-day expiry',
      365,
      30,
      1,
      { reminderAt: T0 + 335 * DAY_MS, expireAt: T0 + 365 * DAY_MS },
    ],
    [
      'sandbox: the window compressed from createdAt',
      365,
      30,
      3600,
      { reminderAt: T0 + 8_040_000, expireAt: T0 + 8_760_000 },
    ],
    [
      'no reminder when it would fall before the transaction',
      20,
      30,
      1,
      { expireAt: T0 + 20 * DAY_MS },
    ],
    ['no reminder with zero lead time', 365, 0, 1, { expireAt: T0 + 365 * DAY_MS }],
  ])('%s', (_name, validity, before, scale, expected) => {
    expect(expiryInstants(txn(['granted'], validity), before, { slaTimeScale: scale })).toEqual(
      expected,
    );
  });
});

describe('completesErasure', () => {
  const erase = (n: number): RecordChange[] =>
    Array.from({ length: n }, (_, i) => ({
      recordId: `r${i}`,
      purpose: `p${i}`,
      from: 'granted',
      to: 'erased',
      operation: 'erase',
    }));

  it('knows when an erase completes a transaction', () => {
    expect(completesErasure(txn(['erased']), erase(1))).toBe(true);
    expect(completesErasure(txn(['erased']), [])).toBe(false);
    expect(completesErasure(txn(['erased', 'revoked']), erase(1))).toBe(false);
  });
});
