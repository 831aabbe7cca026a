import { describe, expect, it } from 'vitest';
import {
  consentEventSchema,
  planEvents,
  postbackDueAt,
  purposeStates,
  reminderEvent,
  sequencesAfter,
  type EventContext,
} from './events.js';
import type { RecordChange, StoredTransaction } from './model.js';
import { RECORD_STATES } from './states.js';

const now = new Date('2025-01-01T00:00:00.000Z');
let n = 0;
const newId = () => `evt_01J${String(++n).padStart(23, '0')}`;

const txn: StoredTransaction = {
  appId: 'app_x',
  transactionId: 'txn-1',
  referenceId: 'SVC-REF-ABCDEFGH',
  userId: 'u1',
  processId: 'signup',
  noticeId: 'ntc_1',
  noticeVersion: 3,
  language: 'en',
  source: 'widget',
  createdAt: now.toISOString(),
  updatedAt: now.toISOString(),
  expiresAt: '2026-01-01T00:00:00.000Z',
  version: 2,
  sequence: 4,
  records: [
    { recordId: 'r1', purpose: 'analytics', state: 'granted', updatedAt: '' },
    { recordId: 'r2', purpose: 'marketing', state: 'revoked', updatedAt: '' },
    { recordId: 'r3', purpose: 'profiling', state: 'denied', updatedAt: '' },
  ],
};

const ctx = (changes: RecordChange[], created = false, slaTimeScale = 1): EventContext => ({
  app: { appId: 'app_x', environment: 'sandbox' as const, slaTimeScale },
  txn,
  changes,
  created,
  now,
  baseUrl: 'https://svc.example',
  newId,
  nextSequence: sequencesAfter(created ? 0 : txn.sequence),
});

const ch = (
  recordId: string,
  purpose: string,
  from: RecordChange['from'],
  to: RecordChange['to'],
  operation: RecordChange['operation'],
): RecordChange => ({ recordId, purpose, from, to, operation });

describe('planEvents', () => {
  it('a new transaction: consent.created listing every record, then consent.granted for the granted', () => {
    const events = planEvents(
      ctx(
        [
          ch('r1', 'analytics', null, 'granted', 'create'),
          ch('r2', 'marketing', null, 'revoked', 'create'),
          ch('r3', 'profiling', null, 'denied', 'create'),
        ],
        true,
      ),
    );
    expect(events.map((e) => e.type)).toEqual(['consent.created', 'consent.granted']);
    expect(events[0]!.data).toMatchObject({
      recordIds: ['r1', 'r2', 'r3'],
      purposes: { analytics: true, marketing: false, profiling: false },
    });
    expect(events[1]!.data).toMatchObject({ recordIds: ['r1'], purposes: { analytics: true } });
    expect(events[0]!.data.postback).toBeUndefined();
    for (const e of events) expect(consentEventSchema.parse(e)).toEqual(e);
  });

  it('a new transaction with nothing granted emits consent.created only', () => {
    const events = planEvents(ctx([ch('r3', 'profiling', null, 'denied', 'create')], true));
    expect(events.map((e) => e.type)).toEqual(['consent.created']);
  });

  it('one event per type per operation, each with its records; withdrawn carries a 1 h postback', () => {
    const events = planEvents(
      ctx([
        ch('r1', 'analytics', 'revoked', 'granted', 'grant'),
        ch('r2', 'marketing', 'granted', 'revoked', 'revoke'),
        ch('r4', 'ads', 'granted', 'revoked', 'revoke'),
      ]),
    );
    expect(events.map((e) => e.type)).toEqual(['consent.granted', 'consent.withdrawn']);
    const w = events[1]!;
    expect(w.data.recordIds).toEqual(['r2', 'r4']);
    expect(w.data.purposes).toEqual({ marketing: false, ads: false });
    expect(w.data.postback).toEqual({
      required: true,
      dueAt: '2025-01-01T01:00:00.000Z',
      url: 'https://svc.example/api/v1/server/consent/action',
    });
    expect(w).toMatchObject({
      apiVersion: 'v1',
      appId: 'app_x',
      environment: 'sandbox',
      createdAt: now.toISOString(),
      data: {
        referenceId: 'SVC-REF-ABCDEFGH',
        userId: 'u1',
        consentId: 'txn-1',
        noticeId: 'ntc_1',
        noticeVersion: 3,
        expiresAt: '2026-01-01T00:00:00.000Z',
      },
    });
  });

  it('revoking what was never granted is not a withdrawal', () => {
    expect(
      planEvents(ctx([ch('r3', 'profiling', 'denied', 'expired', 'expire')])).map((e) => e.type),
    ).toEqual(['consent.expired']);
  });

  it('erase emits data.deleted with a 24 h postback, compressed by the sandbox time scale', () => {
    const [e] = planEvents(ctx([ch('r1', 'analytics', 'granted', 'erased', 'erase')], false, 3600));
    expect(e!.type).toBe('data.deleted');
    expect(e!.data.postback?.dueAt).toBe('2025-01-01T00:00:24.000Z');
  });

  it('no changes, no events', () => {
    expect(planEvents(ctx([]))).toEqual([]);
  });
});

describe('sequence and state', () => {
  it('a creation’s events are 1 and 2, in the order they are planned', () => {
    const events = planEvents(
      ctx(
        [
          ch('r1', 'analytics', null, 'granted', 'create'),
          ch('r3', 'profiling', null, 'denied', 'create'),
        ],
        true,
      ),
    );
    expect(events.map((e) => [e.type, e.data.sequence])).toEqual([
      ['consent.created', 1],
      ['consent.granted', 2],
    ]);
  });

  it('a change’s events follow the transaction’s last sequence, one each; extra events after them', () => {
    const c = ctx([
      ch('r1', 'analytics', 'revoked', 'granted', 'grant'),
      ch('r2', 'marketing', 'granted', 'revoked', 'revoke'),
    ]);
    const events = [...planEvents(c), reminderEvent(c)];
    expect(events.map((e) => [e.type, e.data.sequence])).toEqual([
      ['consent.granted', 5],
      ['consent.withdrawn', 6],
      ['consent.expiry.reminder', 7],
    ]);
  });

  it('every event carries the state of every purpose after the change', () => {
    const [e] = planEvents(ctx([ch('r2', 'marketing', 'granted', 'revoked', 'revoke')]));
    expect(e!.data.purposes).toEqual({ marketing: false });
    expect(e!.data.state).toEqual({
      analytics: 'granted',
      marketing: 'withdrawn',
      profiling: 'withdrawn',
    });
  });

  it.each([
    ['granted', 'granted'],
    ['denied', 'withdrawn'],
    ['revoked', 'withdrawn'],
    ['expired', 'expired'],
    ['erased', 'erased'],
    ['pending', 'pending'],
  ] as const)('a %s record reads %s', (state, shown) => {
    expect(purposeStates([{ purpose: 'p', state }])).toEqual({ p: shown });
  });

  it('maps every record state', () => {
    const shown = purposeStates(RECORD_STATES.map((state) => ({ purpose: state, state })));
    expect(Object.keys(shown)).toEqual([...RECORD_STATES]);
  });

  it('the schema refuses an event without a positive integer sequence', () => {
    const [e] = planEvents(ctx([ch('r1', 'analytics', 'revoked', 'granted', 'grant')]));
    for (const sequence of [0, 1.5, -1, undefined])
      expect(consentEventSchema.safeParse({ ...e, data: { ...e!.data, sequence } }).success).toBe(
        false,
      );
  });
});

describe('postbackDueAt', () => {
  it.each([
    ['consent.withdrawn', 1, '2025-01-01T01:00:00.000Z'],
    ['consent.expired', 1, '2025-01-04T00:00:00.000Z'],
    ['data.deleted', 1, '2025-01-02T00:00:00.000Z'],
    ['consent.withdrawn', 3600, '2025-01-01T00:00:01.000Z'],
    ['consent.granted', 1, undefined],
    ['consent.created', 1, undefined],
  ] as const)('%s at scale %d → %s', (type, scale, due) => {
    expect(postbackDueAt(type, now, scale)).toBe(due);
  });
});
