import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { LANGUAGES } from '../domain/types.js';
import {
  CATALOGUES,
  LANGUAGE_INFO,
  SURFACES,
  dirOf,
  en,
  fill,
  fromAcceptLanguage,
  uiStrings,
} from './index.js';

/**
 * The catalogue's own checks: every language has exactly the English keys, keeps every
 * placeholder, says nothing in English, and writes in its own script.
 */

const OTHERS = LANGUAGES.filter((l) => l !== 'en');
/** The distinct placeholders of a string (a translation may use one twice). */
const placeholders = (s: string) =>
  [...new Set([...s.matchAll(/\{(\w+)\}/g)].map((m) => m[1]))].sort();
/** The text a reader sees: placeholders out (they are filled with names, dates, links). */
const visible = (s: string) => s.replace(/\{\w+\}/g, '');

/**
 * Strings allowed to read exactly as in English, as `language/surface.key`: brand names and
 * strings of placeholders and punctuation only. Empty today; an entry needs a reason beside it.
 */
const SAME_AS_ENGLISH = new Set<string>([]);

const cases = OTHERS.flatMap((lang) =>
  SURFACES.flatMap((surface) =>
    Object.keys(en[surface]).map((key) => ({
      lang,
      surface,
      key,
      text: (CATALOGUES[lang][surface] as Record<string, string>)[key]!,
      english: (en[surface] as Record<string, string>)[key]!,
    })),
  ),
);

describe('the UI string catalogue', () => {
  it('covers the 23 languages, each with its script and direction', () => {
    expect(Object.keys(CATALOGUES).sort()).toEqual([...LANGUAGES].sort());
    expect(Object.keys(LANGUAGE_INFO).sort()).toEqual([...LANGUAGES].sort());
    expect(LANGUAGES.filter((l) => dirOf(l) === 'rtl').sort()).toEqual(['ks', 'sd', 'ur']);
    expect(LANGUAGE_INFO.mni.script).toBe('Meetei Mayek');
    expect(LANGUAGE_INFO.sat.script).toBe('Ol Chiki');
    expect(LANGUAGE_INFO.as.script).toBe('Bengali-Assamese');
  });

  it.each(OTHERS)('%s has exactly the English keys in every surface', (lang) => {
    for (const surface of SURFACES)
      expect(Object.keys(CATALOGUES[lang][surface]).sort(), `${lang}/${surface}`).toEqual(
        Object.keys(en[surface]).sort(),
      );
  });

  it('keeps every placeholder of the English string, and no other', () => {
    const wrong = cases
      .filter((c) => placeholders(c.text).join() !== placeholders(c.english).join())
      .map((c) => `${c.lang}/${c.surface}.${c.key}: ${c.text}`);
    expect(wrong).toEqual([]);
  });

  it('leaves nothing in English outside English (but for the documented exceptions)', () => {
    const same = cases
      .filter((c) => c.text.trim() === c.english.trim() || visible(c.text).trim() === '')
      .map((c) => `${c.lang}/${c.surface}.${c.key}`)
      .filter((k) => !SAME_AS_ENGLISH.has(k));
    expect(same).toEqual([]);
  });

  it.each(OTHERS)('%s writes every letter in its own script', (lang) => {
    const ranges = LANGUAGE_INFO[lang].letters;
    const inScript = (ch: string) => {
      const cp = ch.codePointAt(0)!;
      return ranges.some(([a, b]) => cp >= a && cp <= b);
    };
    const strays = cases
      .filter((c) => c.lang === lang)
      .flatMap((c) => {
        const bad = [...visible(c.text)].filter((ch) => /[\p{L}\p{M}]/u.test(ch) && !inScript(ch));
        return bad.length ? [`${c.surface}.${c.key}: ${bad.join('')}`] : [];
      });
    expect(strays, `${lang} (${LANGUAGE_INFO[lang].script})`).toEqual([]);
  });

  it('the script check tells a wrong script: Hindi is not Urdu, English is not Tamil', () => {
    const letters = (lang: 'ur' | 'ta', text: string) =>
      [...text]
        .filter((ch) => /\p{L}/u.test(ch))
        .every((ch) =>
          LANGUAGE_INFO[lang].letters.some(
            ([a, b]) => ch.codePointAt(0)! >= a && ch.codePointAt(0)! <= b,
          ),
        );
    expect(letters('ur', CATALOGUES.hi.widget.acceptAll)).toBe(false);
    expect(letters('ta', en.widget.acceptAll)).toBe(false);
    expect(letters('ur', CATALOGUES.ur.widget.acceptAll)).toBe(true);
  });

  it('falls back to English for a code that is not one of the 23 (own keys only)', () => {
    for (const code of ['fr', '', 'constructor', '__proto__', 'toString'])
      expect(uiStrings('portal', code)).toBe(en.portal);
    expect(uiStrings('mail', 'ta')).toBe(CATALOGUES.ta.mail);
  });

  it('fills placeholders once, leaving unknown ones visible', () => {
    expect(fill('{app} asks {who}', { app: 'A {who}' })).toBe('A {who} asks {who}');
    expect(fill('{a}{a}', { a: 1 })).toBe('11');
  });

  it('picks a language from Accept-Language by weight and primary subtag', () => {
    expect(fromAcceptLanguage('ta-IN,ta;q=0.9,en;q=0.8')).toBe('ta');
    expect(fromAcceptLanguage('fr-FR, ur;q=0.5, hi;q=0.7')).toBe('hi');
    expect(fromAcceptLanguage('fr, de;q=0.9')).toBe('en');
    expect(fromAcceptLanguage('ur;q=0, *')).toBe('en');
    expect(fromAcceptLanguage(undefined)).toBe('en');
  });

  it('has every English string the browser scripts fall back to, so none goes untranslated', () => {
    const js = (file: string) =>
      fs.readFileSync(new URL(`../../widget/${file}`, import.meta.url), 'utf8');
    /** The keys of the object literal that follows `marker` (one `key: value` per line). */
    const keysAfter = (src: string, marker: string) => {
      const start = src.indexOf(marker);
      expect(start, marker).toBeGreaterThan(-1);
      // Up to the closing brace indented as the line the marker ends on.
      const line = src.slice(src.lastIndexOf('\n', start + marker.length - 1) + 1);
      const indent = /^ */.exec(line)![0];
      const block = src.slice(start + marker.length, src.indexOf(`\n${indent}}`, start));
      return [...block.matchAll(/^\s+(\w+):/gm)].map((m) => m[1]!);
    };
    const widget = js('svc-consent.v1.js');
    expect(keysAfter(widget, 'const EN = {').filter((k) => !(k in en.widget))).toEqual([]);
    const dashboard = js('svc-dashboard.v1.js');
    const dashboardKeys = [
      ...keysAfter(dashboard, 'const STR = {\n    en: {'),
      ...(dashboard.includes('const G_EN = {') ? keysAfter(dashboard, 'const G_EN = {') : []),
    ];
    expect(dashboardKeys.length).toBeGreaterThan(30);
    expect(dashboardKeys.filter((k) => !(k in en.dashboard))).toEqual([]);
  });

  it('keeps the widget script free of translations: they are fetched per language', () => {
    for (const file of ['svc-consent.v1.js', 'svc-dashboard.v1.js', 'svc-cookies.v1.js']) {
      const js = fs.readFileSync(new URL(`../../widget/${file}`, import.meta.url), 'utf8');
      // No letter of any Indian script or of Perso-Arabic: only English ships in the file.
      // eslint-disable-next-line no-misleading-character-class -- whole scripts' code-point ranges
      expect(js, file).not.toMatch(/[\u0600-\u06ff\u0900-\u0d7f\u1c50-\u1c7f\uabc0-\uabff]/u);
    }
  });
});
