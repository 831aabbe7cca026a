import { describe, expect, it } from 'vitest';
import {
  RECORD_OPERATIONS,
  RECORD_STATES,
  deriveStatus,
  transition,
  type RecordOperation,
  type RecordState,
} from './states.js';

/** Expected outcome of every (state, operation): next state, `=` for a no-op, 409 refused. */
const table: Record<RecordState, Record<RecordOperation, RecordState | '=' | 409>> = {
  denied: {
    grant: 'granted',
    revoke: '=',
    expire: 'expired',
    erase: 'erased',
    verify: '=',
    refuse: '=',
  },
  granted: {
    grant: '=',
    revoke: 'revoked',
    expire: 'expired',
    erase: 'erased',
    verify: '=',
    refuse: '=',
  },
  revoked: {
    grant: 'granted',
    revoke: '=',
    expire: 'expired',
    erase: 'erased',
    verify: '=',
    refuse: '=',
  },
  expired: { grant: 409, revoke: '=', expire: '=', erase: 'erased', verify: '=', refuse: '=' },
  erased: { grant: 409, revoke: '=', expire: '=', erase: '=', verify: '=', refuse: '=' },
  pending: {
    grant: 409,
    revoke: 'denied',
    expire: 'expired',
    erase: 'erased',
    verify: 'granted',
    refuse: 'denied',
  },
};

describe('record state machine', () => {
  const cases = RECORD_STATES.flatMap((s) =>
    RECORD_OPERATIONS.map((op) => [s, op, table[s][op]] as const),
  );

  it('the table names every (state, operation) pair', () => {
    expect(cases).toHaveLength(RECORD_STATES.length * RECORD_OPERATIONS.length);
  });

  it.each(cases)('%s + %s → %s', (from, op, expected) => {
    const t = transition(from, op);
    if (expected === 409) {
      expect(t.ok).toBe(false);
      return;
    }
    expect(t).toEqual(
      expected === '='
        ? { ok: true, to: from, changed: false }
        : { ok: true, to: expected, changed: true },
    );
  });

  it('applying the same operation twice is a no-op the second time', () => {
    for (const s of RECORD_STATES)
      for (const op of RECORD_OPERATIONS) {
        const first = transition(s, op);
        if (!first.ok) continue;
        expect(transition(first.to, op)).toEqual({ ok: true, to: first.to, changed: false });
      }
  });

  it('erased is terminal: no operation leaves it', () => {
    for (const op of RECORD_OPERATIONS) {
      const t = transition('erased', op);
      if (t.ok) expect(t.to).toBe('erased');
    }
  });
});

describe('transaction status', () => {
  it.each([
    [['granted', 'denied'], 'active'],
    [['denied'], 'active'],
    [['granted'], 'active'],
    [['granted', 'revoked'], 'partially_revoked'],
    [['granted', 'revoked', 'denied'], 'partially_revoked'],
    [['revoked'], 'revoked'],
    [['revoked', 'denied'], 'revoked'],
    [['revoked', 'expired'], 'revoked'],
    [['erased'], 'erased'],
    [['erased', 'erased'], 'erased'],
    [['expired', 'expired'], 'expired'],
    [['expired', 'erased'], 'expired'],
    [['granted', 'erased'], 'active'],
    [['revoked', 'erased'], 'revoked'],
    [['granted', 'expired'], 'active'],
    [[], 'active'],
    [['pending', 'denied'], 'pending'],
    [['pending', 'erased'], 'pending'],
    [['pending', 'expired'], 'pending'],
  ] as [RecordState[], string][])('%j → %s', (states, status) => {
    expect(deriveStatus(states)).toBe(status);
  });
});
