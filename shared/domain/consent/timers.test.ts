import { describe, expect, it } from 'vitest';
import { T0, aTransaction } from '../../../test/helpers/transactions.js';
import type { RecordChange } from './model.js';
import { DAY_MS, completesErasure, expiryInstants } from './timers.js';

const txn = aTransaction;

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
