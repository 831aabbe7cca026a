import { describe, expect, it } from 'vitest';
import { captureRecords } from './capture.js';
import { parentalRequiredEvent, planEvents, sequencesAfter } from './events.js';
import type { RecordChange, StoredTransaction } from './model.js';
import { parentalVerificationBody } from './parental.js';
import { applyOperation } from './apply.js';

const notice = {
  purposes: [
    { name: 'essential', required: true, dataItems: [] },
    { name: 'games', required: false, dataItems: [] },
    { name: 'chat', required: false, dataItems: [] },
  ],
  translations: { en: { title: 't', body: 'b', purposes: {} } },
  requiresParentalConsent: true,
};
let n = 0;
const id = () => `r${++n}`;
const now = new Date('2026-01-01T00:00:00.000Z');

describe('capture under a notice that requires parental consent', () => {
  it('the chosen purposes are pending, the others denied; nothing is granted', () => {
    const granular = captureRecords(
      notice,
      { mode: 'granular', granted: ['essential', 'games'], language: 'en' },
      'now',
      id,
    );
    expect(granular.map((r) => [r.purpose, r.state])).toEqual([
      ['essential', 'pending'],
      ['games', 'pending'],
      ['chat', 'denied'],
    ]);
    const silent = captureRecords(
      notice,
      { mode: 'silent', granted: [], language: 'en' },
      'now',
      id,
    );
    expect(silent.every((r) => r.state === 'pending')).toBe(true);
  });

  it('consent.created lists them not granted; the verification event lists the pending ones, without postback', () => {
    const txn = {
      appId: 'app_x',
      transactionId: 'txn-1',
      referenceId: 'SVC-REF-ABCDEFGH',
      processId: 'kids',
      noticeId: 'ntc_1',
      noticeVersion: 1,
      language: 'en',
      source: 'widget',
      createdAt: now.toISOString(),
      updatedAt: now.toISOString(),
      expiresAt: '2027-01-01T00:00:00.000Z',
      version: 1,
      sequence: 2,
      records: [
        { recordId: 'a', purpose: 'essential', state: 'pending', updatedAt: '' },
        { recordId: 'b', purpose: 'chat', state: 'denied', updatedAt: '' },
      ],
    } satisfies StoredTransaction;
    const changes: RecordChange[] = txn.records.map((r) => ({
      recordId: r.recordId,
      purpose: r.purpose,
      from: null,
      to: r.state,
      operation: 'create',
    }));
    const c = {
      app: { appId: 'app_x', environment: 'sandbox' as const, slaTimeScale: 1 },
      txn,
      changes,
      created: true,
      now,
      baseUrl: 'https://svc.example',
      newId: () => 'evt_01J00000000000000000000001',
      nextSequence: sequencesAfter(0),
    };
    expect(planEvents(c).map((e) => [e.type, e.data.purposes, e.data.sequence])).toEqual([
      ['consent.created', { essential: false, chat: false }, 1],
    ]);
    const e = parentalRequiredEvent(c);
    expect(e.type).toBe('consent.parental_verification_required');
    expect(e.data.recordIds).toEqual(['a']);
    expect(e.data.purposes).toEqual({ essential: false });
    expect(e.data.sequence).toBe(2);
    expect(e.data.state).toEqual({ essential: 'pending', chat: 'withdrawn' });
    expect(e.data.postback).toBeUndefined();
  });

  it('verify grants only the pending records, refuse denies them; grant alone is refused', () => {
    const records = [
      { recordId: 'a', purpose: 'essential', state: 'pending' as const, updatedAt: '' },
      { recordId: 'b', purpose: 'chat', state: 'denied' as const, updatedAt: '' },
    ];
    const v = applyOperation(records, 'verify', 'now');
    expect(v.records.map((r) => r.state)).toEqual(['granted', 'denied']);
    expect(v.changes).toHaveLength(1);
    expect(applyOperation(records, 'refuse', 'now').records.map((r) => r.state)).toEqual([
      'denied',
      'denied',
    ]);
    expect(() => applyOperation(records, 'grant', 'now')).toThrow(/parental/);
  });
});

describe('parentalVerificationBody', () => {
  const base = {
    outcome: 'verified',
    method: 'digilocker',
    reference: 'dl-123',
    verifiedAt: '2026-01-01T10:00:00.000Z',
  };
  it.each([
    ['a DigiLocker verification', base, true],
    ['without its reference', { ...base, reference: undefined }, false],
    ['a failure with its remark', { ...base, outcome: 'failed', remark: 'no match' }, true],
    ['a failure without a remark', { ...base, outcome: 'failed' }, false],
    ['an unknown method', { ...base, method: 'selfie' }, false],
    ['a time without milliseconds', { ...base, verifiedAt: '2026-01-01T10:00:00Z' }, false],
    ['an unknown field', { ...base, extra: 1 }, false],
  ])('%s', (_name, body, ok) => {
    expect(parentalVerificationBody.safeParse(body).success).toBe(ok);
  });
});
