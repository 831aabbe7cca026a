import { describe, expect, it } from 'vitest';
import { canonicalJson, noticeRuleErrors, noticeTextHash, type NoticeInput } from './notices.js';

const base = (): NoticeInput => ({
  kind: 'data_collection',
  triggerKey: 'newsletter_signup',
  defaultLanguage: 'en',
  purposes: [
    { name: 'marketing', required: false, dataItems: ['email'] },
    { name: 'analytics', required: false, dataItems: [] },
  ],
  translations: {
    en: {
      title: 'T',
      body: 'B',
      purposes: {
        marketing: { label: 'M', description: 'md' },
        analytics: { label: 'A', description: 'ad' },
      },
    },
  },
  validityDays: 365,
  reminderDaysBefore: 30,
});

describe('canonicalJson and noticeTextHash', () => {
  it('does not depend on key order but on every value', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { z: 1, y: 2 }], c: null } })).toBe(
      '{"a":{"c":null,"d":[1,{"y":2,"z":1}]},"b":1}',
    );
    const n = base();
    const reordered = { translations: n.translations, purposes: n.purposes };
    expect(noticeTextHash(reordered)).toBe(noticeTextHash(n));
    const changed = base();
    changed.translations.en!.purposes.marketing!.label = 'M2';
    expect(noticeTextHash(changed)).not.toBe(noticeTextHash(n));
  });
});

describe('noticeRuleErrors', () => {
  it('accepts a complete notice', () => {
    expect(noticeRuleErrors(base())).toEqual([]);
  });

  const cases: [string, (n: NoticeInput) => void, string[]][] = [
    [
      'duplicate purpose',
      (n) => n.purposes.push({ name: 'marketing', required: true, dataItems: [] }),
      ['/purposes/2/name'],
    ],
    ['unknown language', (n) => (n.translations.xx = n.translations.en!), ['/translations/xx']],
    [
      'missing en',
      (n) => {
        n.translations.hi = n.translations.en!;
        delete n.translations.en;
        n.defaultLanguage = 'hi';
      },
      ['/translations/en'],
    ],
    ['missing default language', (n) => (n.defaultLanguage = 'ta'), ['/translations/ta']],
    [
      'purpose without text',
      (n) => delete n.translations.en!.purposes.analytics,
      ['/translations/en/purposes/analytics'],
    ],
    [
      'text for an undeclared purpose',
      (n) => (n.translations.en!.purposes.extra = { label: 'x', description: 'y' }),
      ['/translations/en/purposes/extra'],
    ],
    ['reminder not before expiry', (n) => (n.reminderDaysBefore = 365), ['/reminderDaysBefore']],
  ];
  it.each(cases)('%s', (_name, change, paths) => {
    const n = base();
    change(n);
    expect(noticeRuleErrors(n).map((e) => e.path)).toEqual(paths);
  });
});
