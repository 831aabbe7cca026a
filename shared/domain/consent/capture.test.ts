import { describe, expect, it } from 'vitest';
import { AppError } from '../../errors.js';
import { captureRecords } from './capture.js';

const notice = {
  purposes: [
    { name: 'essential', required: true, dataItems: [] },
    { name: 'analytics', required: false, dataItems: [] },
    { name: 'marketing', required: false, dataItems: [] },
  ],
  translations: {
    en: { title: 't', body: 'b', purposes: {} },
    hi: { title: 't', body: 'b', purposes: {} },
  },
};
let n = 0;
const id = () => `r${++n}`;

function errorsOf(fn: () => unknown) {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(AppError);
    expect((e as AppError).code).toBe('SVC_VALIDATION_FAILED');
    return (e as AppError).errors;
  }
  throw new Error('expected a validation error');
}

describe('captureRecords', () => {
  it('granular: listed purposes granted, the others denied, in notice order', () => {
    const r = captureRecords(
      notice,
      { mode: 'granular', granted: ['marketing', 'essential'], language: 'hi' },
      'now',
      id,
    );
    expect(r.map((x) => [x.purpose, x.state])).toEqual([
      ['essential', 'granted'],
      ['analytics', 'denied'],
      ['marketing', 'granted'],
    ]);
    expect(new Set(r.map((x) => x.recordId)).size).toBe(3);
  });

  it('silent: every purpose granted whatever the list says', () => {
    const r = captureRecords(notice, { mode: 'silent', granted: [], language: 'en' }, 'now', id);
    expect(r.every((x) => x.state === 'granted')).toBe(true);
  });

  it('refuses a missing required purpose, an unknown purpose and a language without text', () => {
    expect(
      errorsOf(() =>
        captureRecords(
          notice,
          { mode: 'granular', granted: ['analytics', 'tracking'], language: 'ta' },
          'now',
          id,
        ),
      ),
    ).toEqual([
      { path: '/language', message: expect.any(String) },
      { path: '/purposes/1', message: expect.stringContaining('tracking') },
      { path: '/purposes', message: expect.stringContaining('essential') },
    ]);
  });

  it.each(['constructor', 'toString', '__proto__'])(
    'refuses the language %s: only own translations count',
    (language) => {
      expect(
        errorsOf(() =>
          captureRecords(notice, { mode: 'silent', granted: [], language }, 'now', id),
        ),
      ).toEqual([{ path: '/language', message: expect.any(String) }]);
    },
  );
});
