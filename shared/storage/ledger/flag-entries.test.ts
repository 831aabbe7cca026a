import { describe, expect, it } from 'vitest';
import { GENESIS, chainHash } from '../../domain/ledger/hash.js';
import { nearDeadlineAt } from '../../domain/deadlines.js';
import { chainAfter, flagSk, POSTBACK_EVENTS } from './flag-entries.js';
import { gaugeDeltas, postbackSk, type ComplianceWrite } from './postbacks.js';

describe('flag and postback entry keys', () => {
  it('sort flag entries by time, then by number within one instant', () => {
    const at = '2026-01-01T00:00:00.000Z';
    const later = '2026-01-01T00:00:00.001Z';
    expect([flagSk(later, 1), flagSk(at, 10), flagSk(at, 2)].sort()).toEqual([
      `FLAG#${at}#0002`,
      `FLAG#${at}#0010`,
      `FLAG#${later}#0001`,
    ]);
    expect(postbackSk(at, 'pb_X')).toBe(`PB#${at}#pb_X`);
  });

  it('chains bodies after a head, each linked to the one before', () => {
    const { entries, head } = chainAfter<{ n: number; prevHash: string }>(GENESIS, [
      { n: 1 },
      { n: 2 },
    ]);
    expect(entries[0]).toEqual({
      n: 1,
      prevHash: GENESIS,
      hash: chainHash(GENESIS, { n: 1, prevHash: GENESIS }),
    });
    expect(entries[1]!.prevHash).toBe(entries[0]!.hash);
    expect(head).toBe(entries[1]!.hash);
    expect(chainAfter(GENESIS, []).head).toBe(GENESIS);
  });

  it('puts the near-deadline mark at 80 % of the window, on a whole millisecond', () => {
    expect(nearDeadlineAt(0, 3_600_000)).toBe(2_880_000);
    expect(nearDeadlineAt(0, 1001)).toBe(801);
    expect(POSTBACK_EVENTS).toEqual(['consent.expired', 'consent.withdrawn', 'data.deleted']);
  });
});

describe('gaugeDeltas', () => {
  const w = (
    over: Omit<Partial<ComplianceWrite>, 'base'> & { base?: Partial<ComplianceWrite['base']> },
  ) =>
    ({
      changes: [],
      gauges: { awaitingPostback: true, nearDeadline: false },
      ...over,
      base: {
        dispatchId: 'dsp_x',
        event: 'data.deleted',
        headHash: GENESIS,
        complianceFlag: null,
        awaitingPostback: undefined,
        nearDeadline: undefined,
        flagCount: 0,
        ...over.base,
      },
    }) as ComplianceWrite;
  const flag = (f: 'at_risk' | 'unconfirmed_erasure' | 'critical') => ({
    flag: f,
    previous: null,
    at: 'x',
    cause: 'postback' as const,
  });

  it.each([
    ['first check: counted as awaiting', w({}), { awaiting: 1, near: 0, unconfirmed: 0 }],
    [
      'a postback before any check: never counted',
      w({ gauges: { awaitingPostback: false, nearDeadline: false } }),
      { awaiting: 0, near: 0, unconfirmed: 0 },
    ],
    [
      'the first postback while near the deadline',
      w({
        base: { awaitingPostback: true, nearDeadline: true },
        gauges: { awaitingPostback: false, nearDeadline: false },
      }),
      { awaiting: -1, near: -1, unconfirmed: 0 },
    ],
    [
      'entering unconfirmed_erasure',
      w({
        base: { awaitingPostback: true, nearDeadline: false },
        changes: [flag('at_risk'), flag('unconfirmed_erasure')],
      }),
      { awaiting: 0, near: 0, unconfirmed: 1 },
    ],
    [
      'leaving it for critical',
      w({
        base: {
          awaitingPostback: true,
          nearDeadline: false,
          complianceFlag: 'unconfirmed_erasure',
        },
        gauges: { awaitingPostback: false, nearDeadline: false },
        changes: [flag('critical')],
      }),
      { awaiting: -1, near: 0, unconfirmed: -1 },
    ],
  ])('%s', (_name, write, expected) => {
    expect(gaugeDeltas(write)).toEqual(expected);
  });
});
