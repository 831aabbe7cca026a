import { describe, expect, it } from 'vitest';
import { headProblems } from './evidence.js';

const att = (attempt: number, outcome: string, time: string, deliveryStatus?: string) => ({
  attempt,
  outcome,
  time,
  ...(deliveryStatus ? { deliveryStatus } : {}),
});
const flag = (seq: number, f: string) => ({ seq, flag: f });

describe('headProblems', () => {
  const cases: [string, Parameters<typeof headProblems>[0], string[]][] = [
    ['fresh dispatch', { deliveryStatus: 'pending', attempts: [], flags: [] }, []],
    [
      'pending claimed delivered',
      { deliveryStatus: 'delivered', attempts: [], flags: [] },
      ['deliveryStatus'],
    ],
    [
      'recorded status is the last attempt’s',
      {
        deliveryStatus: 'failed',
        attemptCount: 2,
        lastAttemptAt: 't2',
        attempts: [att(2, 'failed', 't2', 'failed'), att(1, 'failed', 't1', 'pending')],
        flags: [],
      },
      [],
    ],
    [
      'failed flipped to pending',
      {
        deliveryStatus: 'pending',
        lastAttemptAt: 't1',
        attempts: [att(1, 'failed', 't1', 'failed')],
        flags: [],
      },
      ['deliveryStatus'],
    ],
    [
      'entries from before the status was chained: failed or pending both fit',
      {
        deliveryStatus: 'failed',
        attempts: [att(1, 'failed', 't1')],
        lastAttemptAt: 't1',
        flags: [],
      },
      [],
    ],
    [
      'a delivered dispatch never goes back',
      {
        deliveryStatus: 'failed',
        lastAttemptAt: 't2',
        deliveredAt: 't1',
        attempts: [att(1, 'delivered', 't1'), att(2, 'failed', 't2')],
        flags: [],
      },
      ['deliveryStatus'],
    ],
    [
      'deliveredAt names no delivery',
      {
        deliveryStatus: 'delivered',
        deliveredAt: 'tX',
        lastAttemptAt: 't1',
        attempts: [att(1, 'delivered', 't1')],
        flags: [],
      },
      ['deliveredAt'],
    ],
    [
      'flag is the last by seq, whatever the order given',
      {
        complianceFlag: 'breach',
        deliveryStatus: 'pending',
        attempts: [],
        flags: [flag(2, 'breach'), flag(1, 'at_risk')],
      },
      [],
    ],
    [
      'worstFlag is the most severe flag entry',
      {
        complianceFlag: 'ok',
        worstFlag: 'breach',
        deliveryStatus: 'pending',
        attempts: [],
        flags: [flag(1, 'at_risk'), flag(2, 'breach'), flag(3, 'ok')],
      },
      [],
    ],
    [
      'worstFlag raised above the entries',
      {
        complianceFlag: 'ok',
        worstFlag: 'critical',
        deliveryStatus: 'pending',
        attempts: [],
        flags: [flag(1, 'ok')],
      },
      ['worstFlag'],
    ],
    [
      'flag without an entry',
      { complianceFlag: 'ok', deliveryStatus: 'pending', attempts: [], flags: [] },
      ['complianceFlag'],
    ],
    [
      'flag removed from the head',
      {
        complianceFlag: null,
        deliveryStatus: 'pending',
        attempts: [],
        flags: [flag(1, 'at_risk')],
      },
      ['complianceFlag'],
    ],
    [
      'attempt count and time',
      {
        deliveryStatus: 'pending',
        attemptCount: 2,
        lastAttemptAt: 't0',
        attempts: [att(1, 'failed', 't1', 'pending')],
        flags: [],
      },
      ['attemptCount', 'lastAttemptAt'],
    ],
  ];
  for (const [name, input, fields] of cases)
    it(name, () => expect(headProblems(input).map((p) => p.field)).toEqual(fields));
});
