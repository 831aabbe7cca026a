import { describe, expect, it } from 'vitest';
import { uiStrings } from './strings.js';

describe('uiStrings', () => {
  it.each([
    ['hi', 'सभी स्वीकार करें'],
    ['ta', 'Accept all'],
    ['constructor', 'Accept all'],
    ['valueOf', 'Accept all'],
    ['__proto__', 'Accept all'],
  ])('%s → acceptAll %s', (lang, acceptAll) => {
    const s = uiStrings(lang);
    expect(s.acceptAll).toBe(acceptAll);
    expect(Object.keys(s).sort()).toEqual([
      'acceptAll',
      'close',
      'manage',
      'rejectAll',
      'required',
      'save',
    ]);
  });
});
