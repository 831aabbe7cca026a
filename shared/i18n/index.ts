import type { Language } from '../domain/types.js';
import { en, type Catalogue, type Strings, type Surface } from './en.js';
import { as } from './lang/as.js';
import { bn } from './lang/bn.js';
import { brx } from './lang/brx.js';
import { doi } from './lang/doi.js';
import { gu } from './lang/gu.js';
import { hi } from './lang/hi.js';
import { kn } from './lang/kn.js';
import { kok } from './lang/kok.js';
import { ks } from './lang/ks.js';
import { mai } from './lang/mai.js';
import { ml } from './lang/ml.js';
import { mni } from './lang/mni.js';
import { mr } from './lang/mr.js';
import { ne } from './lang/ne.js';
import { or } from './lang/or.js';
import { pa } from './lang/pa.js';
import { sa } from './lang/sa.js';
import { sat } from './lang/sat.js';
import { sd } from './lang/sd.js';
import { ta } from './lang/ta.js';
import { te } from './lang/te.js';
import { ur } from './lang/ur.js';
import { isLanguage } from './languages.js';

/**
 * The UI strings of the widget, dashboard, portal and e-mails in the 23 languages (LANGUAGES.md).
 * Every language but English is a machine translation awaiting review by native speakers.
 */

export { en, SURFACES, type Catalogue, type Strings, type Surface } from './en.js';
export {
  LANGUAGE_INFO,
  dirOf,
  fromAcceptLanguage,
  isLanguage,
  type Direction,
  type LanguageInfo,
} from './languages.js';

export const CATALOGUES: Readonly<Record<Language, Catalogue>> = {
  en,
  as,
  bn,
  brx,
  doi,
  gu,
  hi,
  kn,
  ks,
  kok,
  mai,
  ml,
  mni,
  mr,
  ne,
  or,
  pa,
  sa,
  sat,
  sd,
  ta,
  te,
  ur,
};

/** The strings of one surface in `lang`; English for any code that is not one of the 23. */
export function uiStrings<S extends Surface>(surface: S, lang: string): Strings<S> {
  return (isLanguage(lang) ? CATALOGUES[lang] : en)[surface];
}

/**
 * `template` with each `{name}` replaced by `vars[name]` (as given: the caller escapes for
 * HTML). A placeholder without a value stays as it is, so a missing one is visible, not empty.
 */
export function fill(template: string, vars: Readonly<Record<string, string | number>>): string {
  return template.replace(/\{(\w+)\}/g, (whole, name: string) =>
    Object.hasOwn(vars, name) ? String(vars[name]) : whole,
  );
}
