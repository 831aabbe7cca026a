import { AppError, type FieldError } from '../errors.js';
import { cached, invalidateCache, type CacheOwner } from './cache.js';
import { sha256hex } from './crypto.js';
import { newNoticeId, patterns } from './ids.js';
import { REGION_FORMAT, canonicalRegion } from './regions.js';
import { LANGUAGES, type NoticeVersion } from './types.js';

/**
 * Notices: versioned, with a trigger key unique per app and region (docs/api.md, Regions). The
 * store (`NoticeStore`) writes a change, its new version and the trigger claims it takes or gives
 * up in one write, so concurrent changes never lose a version and never share a region.
 */
export type NoticeInput = Omit<
  NoticeVersion,
  'appId' | 'noticeId' | 'version' | 'textHash' | 'createdAt'
>;

const NOTICE_ID = /^ntc_[0-9A-HJKMNP-TV-Z]{26}$/;
const languageSet = new Set<string>(LANGUAGES);

/** How a notice write ended (anything else is thrown). */
export type NoticeWrite =
  /** Written. */
  | 'written'
  /** The app does not exist. */
  | 'unknown_app'
  /** Another notice holds a trigger claim (a region, or the region-less place) it needs. */
  | 'claim_taken'
  /** The head is no longer the one read: read it again. */
  | 'moved'
  /** Another write held one of its items at that moment: try again. */
  | 'contended';

/** Where notices are kept (shared/storage/notices/store.ts). */
export interface NoticeStore {
  /** Puts version 1, its head and its trigger claims, if the app exists and the claims are free. */
  create(notice: NoticeVersion): Promise<NoticeWrite>;
  /** Puts `next` over `head` (if still the head), taking and giving up claims as they differ. */
  replace(head: NoticeVersion, next: NoticeVersion): Promise<NoticeWrite>;
  /** The latest version, or version `version` (consistent). */
  get(appId: string, noticeId: string, version?: number): Promise<NoticeVersion | undefined>;
  /** The latest version of each of the app's notices, oldest notice first (consistent). */
  list(appId: string): Promise<NoticeVersion[]>;
  /** The notices holding claims of one trigger key, with the regions each holds (consistent). */
  triggerHolders(
    appId: string,
    triggerKey: string,
  ): Promise<{ noticeId: string; regions?: string[] }[]>;
}

/** What the notice functions use; a Runtime is one. */
export interface NoticesDeps extends CacheOwner {
  notices: NoticeStore;
}

/** One notice of a trigger key as the selection sees it: its regions, none for everywhere. */
export interface RegionCandidate {
  regions?: readonly string[] | undefined;
}

/**
 * Which of the notices of one trigger key serves a visitor in `region` (docs/api.md, Regions):
 * the notice whose regions include it, else the one without regions, else none. Without a
 * region, only the one without regions. The store keeps regions from overlapping, so at most
 * one notice matches each rule.
 */
export function selectNotice<T extends RegionCandidate>(
  candidates: readonly T[],
  region: string | undefined,
): T | undefined {
  const regional =
    region === undefined ? undefined : candidates.find((c) => c.regions?.includes(region));
  return regional ?? candidates.find((c) => !c.regions?.length);
}

/**
 * What keeps a notice with `regions` (none: everywhere else) from sharing its trigger key with
 * `others` (the other notices of that key): each region another notice already covers, with
 * that notice (`region` null: another notice is already the one without regions).
 */
export function regionConflicts<T extends RegionCandidate & { noticeId: string }>(
  others: readonly T[],
  regions: readonly string[] | undefined,
): { region: string | null; noticeId: string }[] {
  if (!regions?.length) {
    const other = others.find((o) => !o.regions?.length);
    return other ? [{ region: null, noticeId: other.noticeId }] : [];
  }
  return regions.flatMap((region) => {
    const other = others.find((o) => o.regions?.includes(region));
    return other ? [{ region, noticeId: other.noticeId }] : [];
  });
}

/**
 * A notice's regions as stored: current codes (a retired code becomes its successor), sorted,
 * each once; undefined (everywhere) stays undefined. Codes that name no region are left as
 * they are, for `regionErrors` to report.
 */
export function normalizeRegions(regions: readonly string[] | undefined): string[] | undefined {
  if (regions === undefined) return undefined;
  const codes = [...new Set(regions.map((r) => canonicalRegion(r) ?? r))];
  return codes.sort();
}

/** JSON with object keys sorted at every level: equal content, equal text. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const entries = Object.entries(v as Record<string, unknown>)
      .filter(([, x]) => x !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${canonicalJson(x)}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

/** Proof of the text shown: SHA-256 of the canonical JSON of purposes and translations. */
export function noticeTextHash(n: Pick<NoticeVersion, 'purposes' | 'translations'>): string {
  return sha256hex(canonicalJson({ purposes: n.purposes, translations: n.translations }));
}

/** Rules across fields of a notice body (each field alone is checked by its schema). */
export function noticeRuleErrors(n: NoticeInput): FieldError[] {
  const errors: FieldError[] = [];
  const names = new Set<string>();
  n.purposes.forEach((p, i) => {
    if (names.has(p.name))
      errors.push({ path: `/purposes/${i}/name`, message: `duplicate purpose "${p.name}"` });
    names.add(p.name);
  });
  for (const lang of Object.keys(n.translations)) {
    if (!languageSet.has(lang))
      errors.push({ path: `/translations/${lang}`, message: 'is not a supported language' });
  }
  for (const lang of new Set(['en', n.defaultLanguage])) {
    if (!Object.hasOwn(n.translations, lang))
      errors.push({ path: `/translations/${lang}`, message: 'is required' });
  }
  for (const [lang, t] of Object.entries(n.translations)) {
    for (const name of names) {
      if (!Object.hasOwn(t.purposes, name))
        errors.push({
          path: `/translations/${lang}/purposes/${name}`,
          message: 'label and description are required for every purpose',
        });
    }
    for (const name of Object.keys(t.purposes)) {
      if (!names.has(name))
        errors.push({
          path: `/translations/${lang}/purposes/${name}`,
          message: 'is not a purpose of this notice',
        });
    }
  }
  if (n.reminderDaysBefore >= n.validityDays)
    errors.push({ path: '/reminderDaysBefore', message: 'must be less than validityDays' });
  errors.push(...regionErrors(n.regions));
  return errors;
}

/**
 * `regions` must name states or union territories of India, each once (a retired code counts
 * as its successor), and at least one: a notice for everywhere has no `regions` at all.
 */
export function regionErrors(regions: readonly string[] | undefined): FieldError[] {
  if (regions === undefined) return [];
  if (regions.length === 0)
    return [{ path: '/regions', message: 'must name a region; leave it out for everywhere' }];
  const errors: FieldError[] = [];
  const seen = new Map<string, number>();
  regions.forEach((code, i) => {
    const region = canonicalRegion(code);
    if (region === undefined) {
      errors.push({ path: `/regions/${i}`, message: `must be ${REGION_FORMAT}` });
      return;
    }
    const first = seen.get(region);
    if (first !== undefined)
      errors.push({
        path: `/regions/${i}`,
        message: `${code} is already listed at /regions/${first}${code === region ? '' : ` (as ${region})`}`,
      });
    else seen.set(region, i);
  });
  return errors;
}

const concurrent = () =>
  new AppError('SVC_CONFLICT', 'The notice is being changed concurrently; retry');

/**
 * The 409 for a trigger claim that was taken: which regions (or the region-less place) of the
 * trigger key another notice holds, read after the refused write.
 */
async function claimTaken(
  rt: NoticesDeps,
  appId: string,
  notice: Pick<NoticeVersion, 'noticeId' | 'triggerKey' | 'regions'>,
): Promise<AppError> {
  const others = (await rt.notices.triggerHolders(appId, notice.triggerKey)).filter(
    (c) => c.noticeId !== notice.noticeId,
  );
  const conflicts = regionConflicts(others, notice.regions);
  const key = notice.triggerKey;
  if (!notice.regions?.length) {
    const holder = conflicts[0]?.noticeId;
    return new AppError(
      'SVC_CONFLICT',
      `Trigger key "${key}" is already used by another notice of this app without regions${holder ? ` (${holder})` : ''}; give one of them regions`,
      { errors: [{ path: '/triggerKey', message: 'already in use by a notice without regions' }] },
    );
  }
  const listed = conflicts.map((c) => c.region).join(', ');
  return new AppError(
    'SVC_CONFLICT',
    conflicts.length
      ? `Trigger key "${key}" already has a notice for ${listed}; a region has at most one notice per trigger key`
      : `Trigger key "${key}" already has a notice for one of these regions; a region has at most one notice per trigger key`,
    {
      errors: conflicts.length
        ? conflicts.map((c) => ({
            path: '/regions',
            message: `${c.region} is already covered by notice ${c.noticeId}`,
          }))
        : [{ path: '/regions', message: 'overlaps another notice of this trigger key' }],
    },
  );
}

/** Without the fields the service sets; `regions` only when there are some, normalized. */
function withRegions<T extends NoticeInput>(input: T): T {
  const { regions: raw, ...rest } = input;
  const regions = normalizeRegions(raw);
  const errors = regionErrors(regions);
  if (errors.length) throw new AppError('SVC_VALIDATION_FAILED', 'Invalid regions', { errors });
  return (regions?.length ? { ...rest, regions } : rest) as T;
}

export async function createNotice(
  rt: NoticesDeps,
  appId: string,
  body: NoticeInput,
): Promise<NoticeVersion> {
  const input = withRegions(body);
  const notice: NoticeVersion = {
    appId,
    noticeId: newNoticeId(),
    version: 1,
    ...input,
    textHash: noticeTextHash(input),
    createdAt: new Date().toISOString(),
  };
  for (let attempt = 0; ; attempt++) {
    try {
      const w = await rt.notices.create(notice);
      if (w === 'written') return notice;
      if (w === 'unknown_app') throw new AppError('SVC_NOT_FOUND', 'Unknown app');
      if (w === 'claim_taken') throw await claimTaken(rt, appId, notice);
      // Another notice's write held a claim at that moment: try again, it decides.
      if (attempt >= 2) throw concurrent();
    } finally {
      invalidateCache();
    }
  }
}

/** Content equality, ignoring the fields the service sets. */
const sameContent = (a: NoticeInput, b: NoticeInput) =>
  canonicalJson(contentOf(a)) === canonicalJson(contentOf(b));
function contentOf(n: NoticeInput): NoticeInput {
  const {
    kind,
    triggerKey,
    defaultLanguage,
    purposes,
    translations,
    validityDays,
    reminderDaysBefore,
    regions,
    requiresParentalConsent,
  } = n;
  return {
    kind,
    triggerKey,
    defaultLanguage,
    purposes,
    translations,
    validityDays,
    reminderDaysBefore,
    ...(regions?.length ? { regions } : {}),
    // Stored only when true, so a notice that never named it keeps its content (and version).
    ...(requiresParentalConsent ? { requiresParentalConsent: true } : {}),
  };
}

/**
 * Replaces a notice's content with a new version. A body equal to the latest version changes
 * nothing and returns it (PUT is idempotent). A change of trigger key or regions takes the new
 * trigger claims and gives up the old ones in the same transaction. A concurrent change is
 * retried on the new head (the body is complete).
 */
export async function updateNotice(
  rt: NoticesDeps,
  appId: string,
  noticeId: string,
  body: NoticeInput,
): Promise<NoticeVersion> {
  const input = withRegions(body);
  for (let attempt = 0; ; attempt++) {
    const head = await getNotice(rt, appId, noticeId);
    if (!head) throw new AppError('SVC_NOT_FOUND', 'Unknown notice');
    if (sameContent(head, input)) return head;
    const next: NoticeVersion = {
      appId,
      noticeId,
      version: head.version + 1,
      ...contentOf(input),
      textHash: noticeTextHash(input),
      createdAt: new Date().toISOString(),
    };
    try {
      const w = await rt.notices.replace(head, next);
      if (w === 'written') return next;
      if (w === 'claim_taken') throw await claimTaken(rt, appId, next);
      // The head moved or the write met another: read the head again.
      if (attempt >= 2) throw concurrent();
    } finally {
      invalidateCache();
    }
  }
}

/** The latest version, or version `version`. */
export async function getNotice(
  rt: NoticesDeps,
  appId: string,
  noticeId: string,
  version?: number,
): Promise<NoticeVersion | undefined> {
  if (!patterns.appId.test(appId) || !NOTICE_ID.test(noticeId)) return undefined;
  return rt.notices.get(appId, noticeId, version);
}

/** The latest version of each of the app's notices, oldest notice first. */
export function listNotices(rt: NoticesDeps, appId: string): Promise<NoticeVersion[]> {
  return rt.notices.list(appId);
}

/**
 * The latest version of the notice with this trigger key for a visitor in `region` (a current
 * or retired ISO 3166-2:IN code; none: the notice without regions), by `selectNotice`. Cached;
 * treat it as read-only. Undefined when no notice serves the region, or the region is unknown.
 */
export function getNoticeByTriggerKey(
  rt: NoticesDeps,
  appId: string,
  triggerKey: string,
  region?: string,
): Promise<NoticeVersion | undefined> {
  const where = region === undefined ? undefined : canonicalRegion(region);
  if (
    !patterns.appId.test(appId) ||
    !patterns.triggerKey.test(triggerKey) ||
    triggerKey.length > 200 ||
    (region !== undefined && where === undefined)
  )
    return Promise.resolve(undefined);
  return cached(rt, `trigger:${appId}:${triggerKey}:${where ?? ''}`, async () => {
    const chosen = selectNotice(await rt.notices.triggerHolders(appId, triggerKey), where);
    return chosen === undefined ? undefined : getNotice(rt, appId, chosen.noticeId);
  });
}

/**
 * The union of the purposes of the app's notices (latest versions); undefined when the app has
 * no notice, in which case any well-formed purpose name is allowed. Cached; a fresh Set each call.
 */
export async function declaredPurposes(
  rt: NoticesDeps,
  appId: string,
): Promise<Set<string> | undefined> {
  const names = await cached(rt, `purposes:${appId}`, async () => {
    if (!patterns.appId.test(appId)) return undefined;
    const notices = await listNotices(rt, appId);
    return notices.length ? notices.flatMap((n) => n.purposes.map((p) => p.name)) : undefined;
  });
  return names && new Set(names);
}
