import {
  LANGUAGE_INFO,
  isLanguage,
  uiStrings as catalogueStrings,
} from '../../shared/i18n/index.js';
import type { Strings } from '../../shared/i18n/index.js';

/**
 * The widget's UI strings (shared/i18n): the dialog's and the dashboard's, in each of the 23
 * languages; English for a code that is not one of them (looked up as an own key only, so a
 * language named like an Object.prototype member is just unknown).
 */
export type UiStrings = Strings<'widget'>;

export function uiStrings(language: string): UiStrings {
  return catalogueStrings('widget', language);
}

/** The native names of `languages` (a notice's translations), for the widget's language picker. */
export function languageNames(languages: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const l of languages) if (isLanguage(l)) out[l] = LANGUAGE_INFO[l].native;
  return out;
}

/** What `GET /api/v1/widget/strings/{lang}` answers: the browser scripts' strings in one language. */
export function browserStrings(language: string) {
  const lang = isLanguage(language) ? language : 'en';
  return {
    language: lang,
    dir: LANGUAGE_INFO[lang].dir,
    widget: catalogueStrings('widget', lang),
    dashboard: catalogueStrings('dashboard', lang),
  };
}
