import { LANGUAGES, type Language } from '../domain/types.js';

/**
 * The 23 UI languages (English and the 22 of the Eighth Schedule): names, script and writing
 * direction. `letters` holds the Unicode blocks the language's letters come from, so a test
 * can tell a translation written in the wrong script (or left in English).
 */

export type Direction = 'ltr' | 'rtl';

export interface LanguageInfo {
  code: Language;
  /** English name. */
  name: string;
  /** The language's name for itself, in its own script (shown in language pickers). */
  native: string;
  script: string;
  dir: Direction;
  /** Unicode ranges [first, last] of the script's letters and marks. */
  letters: readonly (readonly [number, number])[];
}

const LATIN = [
  [0x41, 0x5a],
  [0x61, 0x7a],
] as const;
const DEVANAGARI = [
  [0x0900, 0x097f],
  [0xa8e0, 0xa8ff],
] as const;
const BENGALI = [[0x0980, 0x09ff]] as const;
/** Arabic, Arabic Supplement, and the presentation forms. */
const PERSO_ARABIC = [
  [0x0600, 0x06ff],
  [0x0750, 0x077f],
  [0xfb50, 0xfdff],
  [0xfe70, 0xfeff],
] as const;

const info = (
  code: Language,
  name: string,
  native: string,
  script: string,
  letters: LanguageInfo['letters'],
  dir: Direction = 'ltr',
): LanguageInfo => ({ code, name, native, script, dir, letters });

export const LANGUAGE_INFO: Readonly<Record<Language, LanguageInfo>> = {
  en: info('en', 'English', 'English', 'Latin', LATIN),
  as: info('as', 'Assamese', 'অসমীয়া', 'Bengali-Assamese', BENGALI),
  bn: info('bn', 'Bengali', 'বাংলা', 'Bengali-Assamese', BENGALI),
  brx: info('brx', 'Bodo', 'बड़ो', 'Devanagari', DEVANAGARI),
  doi: info('doi', 'Dogri', 'डोगरी', 'Devanagari', DEVANAGARI),
  gu: info('gu', 'Gujarati', 'ગુજરાતી', 'Gujarati', [[0x0a80, 0x0aff]]),
  hi: info('hi', 'Hindi', 'हिन्दी', 'Devanagari', DEVANAGARI),
  kn: info('kn', 'Kannada', 'ಕನ್ನಡ', 'Kannada', [[0x0c80, 0x0cff]]),
  ks: info('ks', 'Kashmiri', 'کٲشُر', 'Perso-Arabic', PERSO_ARABIC, 'rtl'),
  kok: info('kok', 'Konkani', 'कोंकणी', 'Devanagari', DEVANAGARI),
  mai: info('mai', 'Maithili', 'मैथिली', 'Devanagari', DEVANAGARI),
  ml: info('ml', 'Malayalam', 'മലയാളം', 'Malayalam', [[0x0d00, 0x0d7f]]),
  mni: info('mni', 'Manipuri (Meitei)', 'ꯃꯩꯇꯩꯂꯣꯟ', 'Meetei Mayek', [
    [0xabc0, 0xabff],
    [0xaae0, 0xaaff],
  ]),
  mr: info('mr', 'Marathi', 'मराठी', 'Devanagari', DEVANAGARI),
  ne: info('ne', 'Nepali', 'नेपाली', 'Devanagari', DEVANAGARI),
  or: info('or', 'Odia', 'ଓଡ଼ିଆ', 'Odia', [[0x0b00, 0x0b7f]]),
  pa: info('pa', 'Punjabi', 'ਪੰਜਾਬੀ', 'Gurmukhi', [[0x0a00, 0x0a7f]]),
  sa: info('sa', 'Sanskrit', 'संस्कृतम्', 'Devanagari', DEVANAGARI),
  sat: info('sat', 'Santali', 'ᱥᱟᱱᱛᱟᱲᱤ', 'Ol Chiki', [[0x1c50, 0x1c7f]]),
  sd: info('sd', 'Sindhi', 'سنڌي', 'Perso-Arabic', PERSO_ARABIC, 'rtl'),
  ta: info('ta', 'Tamil', 'தமிழ்', 'Tamil', [[0x0b80, 0x0bff]]),
  te: info('te', 'Telugu', 'తెలుగు', 'Telugu', [[0x0c00, 0x0c7f]]),
  ur: info('ur', 'Urdu', 'اردو', 'Perso-Arabic', PERSO_ARABIC, 'rtl'),
};

/** Whether `code` is one of the 23 (own codes only: `constructor` is not a language). */
export function isLanguage(code: unknown): code is Language {
  return typeof code === 'string' && (LANGUAGES as readonly string[]).includes(code);
}

export function dirOf(code: string): Direction {
  return isLanguage(code) ? LANGUAGE_INFO[code].dir : 'ltr';
}

/**
 * The best of the 23 for an `Accept-Language` header (RFC 9110 §12.5.4): highest q first, a
 * tag matching by its primary subtag (`ta-IN` → `ta`); English when none is known.
 */
export function fromAcceptLanguage(header: string | undefined): Language {
  if (!header) return 'en';
  const ranked = header
    .split(',')
    .map((part, i) => {
      const [tag = '', ...params] = part.split(';').map((s) => s.trim());
      const q = params.find((p) => p.startsWith('q='));
      const weight = q === undefined ? 1 : Number(q.slice(2));
      return {
        code: tag.toLowerCase().split('-')[0] ?? '',
        q: Number.isFinite(weight) ? weight : 0,
        i,
      };
    })
    .filter((x) => x.q > 0)
    .sort((a, b) => b.q - a.q || a.i - b.i);
  const best = ranked.find((x) => isLanguage(x.code))?.code;
  return isLanguage(best) ? best : 'en';
}
