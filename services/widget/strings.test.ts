import { describe, expect, it } from 'vitest';
import { en } from '../../shared/i18n/index.js';
import { browserStrings, languageNames, uiStrings } from './strings.js';

describe('uiStrings', () => {
  it.each([
    ['hi', 'सभी स्वीकार करें'],
    ['ta', 'அனைத்தையும் ஏற்கவும்'],
    ['ur', 'سب قبول کریں'],
    ['fr', 'Accept all'],
    ['constructor', 'Accept all'],
    ['valueOf', 'Accept all'],
    ['__proto__', 'Accept all'],
  ])('%s → acceptAll %s, with every key of the widget set', (lang, acceptAll) => {
    const s = uiStrings(lang);
    expect(s.acceptAll).toBe(acceptAll);
    expect(Object.keys(s).sort()).toEqual(Object.keys(en.widget).sort());
  });

  it('names a notice’s languages in their own script, skipping unknown codes', () => {
    expect(languageNames(['en', 'hi', 'ur', 'xx', 'constructor'])).toEqual({
      en: 'English',
      hi: 'हिन्दी',
      ur: 'اردو',
    });
  });

  it('gives the browser scripts one language’s strings with its direction', () => {
    expect(browserStrings('sd')).toMatchObject({ language: 'sd', dir: 'rtl' });
    expect(browserStrings('ta').dashboard.title).toBe('உங்கள் ஒப்புதல் வரலாறு');
    expect(browserStrings('__proto__')).toMatchObject({ language: 'en', dir: 'ltr' });
  });
});
