import { describe, expect, it } from 'vitest';
import { AppError } from '../../errors.js';
import { applyOperation, applyPreferences } from './apply.js';
import type { ConsentRecord } from './model.js';

const rec = (recordId: string, purpose: string, state: ConsentRecord['state']): ConsentRecord => ({
  recordId,
  purpose,
  state,
  updatedAt: 'before',
});

const records = [
  rec('r1', 'analytics', 'granted'),
  rec('r2', 'marketing', 'denied'),
  rec('r3', 'ads', 'revoked'),
];

describe('applyOperation', () => {
  it('applies to every record and reports only the changed ones', () => {
    const r = applyOperation(records, 'revoke', 'now');
    expect(r.records.map((x) => x.state)).toEqual(['revoked', 'denied', 'revoked']);
    expect(r.records.map((x) => x.updatedAt)).toEqual(['now', 'before', 'before']);
    expect(r.changes).toEqual([
      { recordId: 'r1', purpose: 'analytics', from: 'granted', to: 'revoked', operation: 'revoke' },
    ]);
  });

  it('applies only to the named records', () => {
    const r = applyOperation(records, 'grant', 'now', new Set(['r2']));
    expect(r.records.map((x) => x.state)).toEqual(['granted', 'granted', 'revoked']);
    expect(r.changes.map((c) => c.recordId)).toEqual(['r2']);
  });

  it('is all or nothing: one refused record refuses the whole operation with 409', () => {
    const withErased = [...records, rec('r4', 'profiling', 'erased')];
    let err: unknown;
    try {
      applyOperation(withErased, 'grant', 'now');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('SVC_CONFLICT');
    expect((err as AppError).errors).toEqual([
      { path: '/records/3', message: expect.stringContaining('profiling') },
    ]);
  });
});

describe('applyPreferences', () => {
  it('grants, revokes, leaves unnamed purposes alone and adds new purposes as records', () => {
    let id = 0;
    const r = applyPreferences(
      records,
      { analytics: false, marketing: true, newsletter: true, surveys: false },
      'now',
      () => `new${++id}`,
    );
    expect(r.records.map((x) => [x.purpose, x.state])).toEqual([
      ['analytics', 'revoked'],
      ['marketing', 'granted'],
      ['ads', 'revoked'],
      ['newsletter', 'granted'],
      ['surveys', 'denied'],
    ]);
    expect(r.changes.map((c) => [c.purpose, c.from, c.to, c.operation])).toEqual([
      ['analytics', 'granted', 'revoked', 'revoke'],
      ['marketing', 'denied', 'granted', 'grant'],
      ['newsletter', null, 'granted', 'create'],
      ['surveys', null, 'denied', 'create'],
    ]);
  });

  it('false on a never-granted purpose changes nothing', () => {
    expect(applyPreferences(records, { marketing: false }, 'now', () => 'x').changes).toEqual([]);
  });

  it('refuses to grant an erased purpose, naming it', () => {
    expect(() =>
      applyPreferences([rec('r1', 'analytics', 'erased')], { analytics: true }, 'now', () => 'x'),
    ).toThrow(
      expect.objectContaining({
        code: 'SVC_CONFLICT',
        errors: [expect.objectContaining({ path: '/consents/analytics' })],
      }),
    );
  });
});
