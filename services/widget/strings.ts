/** Widget UI strings. English is the fallback for every language without its own set. */
export interface UiStrings {
  acceptAll: string;
  rejectAll: string;
  save: string;
  required: string;
  close: string;
  manage: string;
}

const en: UiStrings = {
  acceptAll: 'Accept all',
  rejectAll: 'Reject optional',
  save: 'Save my choices',
  required: 'Required',
  close: 'Close',
  manage: 'Manage consent',
};

const hi: UiStrings = {
  acceptAll: 'सभी स्वीकार करें',
  rejectAll: 'वैकल्पिक अस्वीकार करें',
  save: 'मेरे विकल्प सहेजें',
  required: 'आवश्यक',
  close: 'बंद करें',
  manage: 'सहमति प्रबंधित करें',
};

const sets = new Map<string, UiStrings>([
  ['en', en],
  ['hi', hi],
]);

/** A Map, so a language named like an Object.prototype member is just unknown. */
export function uiStrings(language: string): UiStrings {
  return sets.get(language) ?? en;
}
