import { describe, expect, it } from 'vitest';
import {
  canonicalJson,
  noticeRuleErrors,
  noticeTextHash,
  normalizeRegions,
  regionConflicts,
  regionErrors,
  selectNotice,
  type NoticeInput,
} from './notices.js';
import { claimsOf } from '../storage/notices/store.js';
import { FORMER_REGION_CODES, REGIONS, canonicalRegion } from './regions.js';

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

describe('regions: the ISO 3166-2:IN list', () => {
  it('has the 36 states and union territories, each once, in IN-XX form', () => {
    expect(REGIONS).toHaveLength(36);
    expect(new Set(REGIONS).size).toBe(36);
    for (const r of REGIONS) expect(r).toMatch(/^IN-[A-Z]{2}$/);
    // The current codes of the four changed in 2023 and of the 2020 merger, and Ladakh (2019).
    for (const r of ['IN-CG', 'IN-OD', 'IN-TS', 'IN-UK', 'IN-DH', 'IN-LA'])
      expect(REGIONS).toContain(r);
  });

  it.each<[string, string | undefined]>([
    ['IN-MH', 'IN-MH'],
    ['IN-KA', 'IN-KA'],
    ['IN-CT', 'IN-CG'],
    ['IN-OR', 'IN-OD'],
    ['IN-TG', 'IN-TS'],
    ['IN-UT', 'IN-UK'],
    ['IN-DN', 'IN-DH'],
    ['IN-DD', 'IN-DH'],
    ['in-mh', undefined],
    ['IN-XX', undefined],
    ['IN-UL', undefined],
    ['MH', undefined],
    ['US-CA', undefined],
    ['constructor', undefined],
    ['__proto__', undefined],
    ['', undefined],
  ])('canonicalRegion(%j) → %j', (code, want) => {
    expect(canonicalRegion(code)).toBe(want);
  });

  it('retires codes only into current ones', () => {
    for (const to of Object.values(FORMER_REGION_CODES)) expect(REGIONS).toContain(to);
    for (const from of Object.keys(FORMER_REGION_CODES)) expect(REGIONS).not.toContain(from);
  });
});

describe('selectNotice: which notice of a trigger key a region gets', () => {
  const mh = { id: 'mh', regions: ['IN-MH'] };
  const south = { id: 'south', regions: ['IN-KA', 'IN-KL', 'IN-TN'] };
  const everywhere = { id: 'everywhere' };
  const emptyRegions = { id: 'empty', regions: [] as string[] };
  const cases: [string, RegionCase[], string | undefined, string | undefined][] = [
    ['its own region wins over the default', [everywhere, mh, south], 'IN-MH', 'mh'],
    ['one of several regions', [everywhere, mh, south], 'IN-KL', 'south'],
    ['the order of the notices does not matter', [south, mh, everywhere], 'IN-MH', 'mh'],
    ['another region gets the default', [mh, south, everywhere], 'IN-GJ', 'everywhere'],
    ['no region gets the default', [mh, south, everywhere], undefined, 'everywhere'],
    ['no region and no default: none', [mh, south], undefined, undefined],
    ['another region and no default: none', [mh, south], 'IN-GJ', undefined],
    ['only a default serves every region', [everywhere], 'IN-TN', 'everywhere'],
    ['empty regions count as none', [mh, emptyRegions], 'IN-GJ', 'empty'],
    ['no notices: none', [], 'IN-MH', undefined],
  ];
  it.each(cases)('%s', (_name, candidates, region, want) => {
    expect(selectNotice(candidates, region)?.id).toBe(want);
  });
});
type RegionCase = { id: string; regions?: string[] };

describe('regionConflicts: one notice per region and trigger key, at most one without regions', () => {
  const others = [{ noticeId: 'ntc_mh', regions: ['IN-MH', 'IN-GA'] }, { noticeId: 'ntc_default' }];
  it.each([
    ['disjoint regions', ['IN-KA', 'IN-KL'], []],
    ['one shared region', ['IN-KA', 'IN-MH'], [{ region: 'IN-MH', noticeId: 'ntc_mh' }]],
    [
      'every shared region is named',
      ['IN-GA', 'IN-MH'],
      [
        { region: 'IN-GA', noticeId: 'ntc_mh' },
        { region: 'IN-MH', noticeId: 'ntc_mh' },
      ],
    ],
    ['a second notice without regions', undefined, [{ region: null, noticeId: 'ntc_default' }]],
  ] as [string, string[] | undefined, unknown[]][])('%s', (_name, regions, want) => {
    expect(regionConflicts(others, regions)).toEqual(want);
  });

  it('allows the first notice without regions', () => {
    expect(regionConflicts([{ noticeId: 'ntc_mh', regions: ['IN-MH'] }], undefined)).toEqual([]);
  });
});

describe('notice regions: validation, normal form and trigger claims', () => {
  it.each([
    ['absent: everywhere', undefined, []],
    ['two states', ['IN-MH', 'IN-KA'], []],
    ['a retired code', ['IN-OR'], []],
    ['empty', [], ['/regions']],
    ['unknown code', ['IN-MH', 'IN-ZZ'], ['/regions/1']],
    ['lower case', ['in-ka'], ['/regions/0']],
    ['repeated', ['IN-MH', 'IN-KA', 'IN-MH'], ['/regions/2']],
    ['repeated through a retired code', ['IN-OD', 'IN-OR'], ['/regions/1']],
  ] as [string, string[] | undefined, string[]][])('%s', (_name, regions, paths) => {
    expect(regionErrors(regions).map((e) => e.path)).toEqual(paths);
    expect(
      noticeRuleErrors({ ...base(), ...(regions ? { regions } : {}) }).map((e) => e.path),
    ).toEqual(paths);
  });

  it('stores current codes, sorted, each once', () => {
    expect(normalizeRegions(undefined)).toBeUndefined();
    expect(normalizeRegions(['IN-MH', 'IN-CT', 'IN-KA', 'IN-MH'])).toEqual([
      'IN-CG',
      'IN-KA',
      'IN-MH',
    ]);
  });

  it('claims one trigger item per region, or the region-less one', () => {
    expect(claimsOf({ triggerKey: 'signup' })).toEqual(['TRIGGER#signup']);
    expect(claimsOf({ triggerKey: 'signup', regions: ['IN-KA', 'IN-MH'] })).toEqual([
      'TRIGGER#signup#IN-KA',
      'TRIGGER#signup#IN-MH',
    ]);
  });

  it('leaves regions out of the text hash (they choose where, not what is shown)', () => {
    expect(noticeTextHash({ ...base(), regions: ['IN-MH'] } as NoticeInput)).toBe(
      noticeTextHash(base()),
    );
  });
});
