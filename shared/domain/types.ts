/**
 * Domain types shared across services and workers. The zod schemas for request bodies live
 * beside the routes; these are the stored shapes.
 */

export type Environment = 'sandbox' | 'live';

export type WebhookOrdering = 'independent' | 'principal';

export interface App {
  appId: string;
  name: string;
  environment: Environment;
  webhookUrl: string;
  allowedOrigins: string[];
  contactEmail: string;
  /** Custom portal URL with `{referenceId}`; the hosted portal when absent. */
  portalUrlTemplate?: string;
  /** Sandbox only (1 for live apps): SLA windows, grace, retries and expiry run this much faster. */
  slaTimeScale: number;
  siteKey: string;
  /** Incremented at every secret rotation. */
  secretVersion: number;
  widgetVerifiedAt: string | null;
  /** The allowlisted origin the widget was last verified from (with widgetVerifiedAt). */
  widgetVerifiedOrigin?: string;
  /**
   * Grace after the SLA window, per event type, in ms; defaults to the window (docs/api.md,
   * Compliance flags).
   */
  graceMs?: Partial<Record<'consent.withdrawn' | 'consent.expired' | 'data.deleted', number>>;
  goLiveAt?: string | null;
  /**
   * Erase a principal's data after this many days without activity, warning them by e-mail
   * first (docs/parental-and-inactivity.md); absent: never.
   */
  inactivityErasureDays?: number;
  /** Days the app takes at most to answer a grievance (1–90; absent: 90). */
  grievanceResponseDays?: number;
  /**
   * Days the ledger keeps a dispatch, its attempts, postbacks and flag changes after their last
   * write (docs/retention.md); at least a year. Absent on apps created before the setting.
   */
  ledgerRetentionDays?: number;
  /**
   * How its webhooks are ordered (docs/webhooks.md, Ordering): `independent`, each event
   * delivered on its own; `principal`, a principal's later events wait while an earlier one
   * of that principal is being retried.
   */
  webhookOrdering: WebhookOrdering;
  createdAt: string;
  updatedAt: string;
}

export type ApiKeyScope = 'consents:read' | 'consents:write' | 'ledger:read' | 'console';

export interface ApiKey {
  id: string;
  appId: string;
  name: string;
  scopes: ApiKeyScope[];
  createdAt: string;
  revokedAt: string | null;
}

export type NoticeKind = 'data_collection' | 'cookie';

export interface NoticePurpose {
  name: string;
  required: boolean;
  dataItems: string[];
}

export interface NoticeTranslation {
  title: string;
  body: string;
  purposes: Record<string, { label: string; description: string }>;
}

/** One immutable version of a notice. */
export interface NoticeVersion {
  appId: string;
  noticeId: string;
  version: number;
  kind: NoticeKind;
  triggerKey: string;
  defaultLanguage: string;
  purposes: NoticePurpose[];
  translations: Record<string, NoticeTranslation>;
  validityDays: number;
  reminderDaysBefore: number;
  /**
   * Capture under this notice needs verifiable parental consent (docs/parental-and-inactivity.md):
   * nothing is granted until the app confirms the verification. Absent: not required.
   */
  requiresParentalConsent?: boolean;
  /**
   * ISO 3166-2:IN codes where this notice is shown (current codes, sorted); absent: everywhere
   * no other notice of its trigger key covers (docs/api.md, Regions).
   */
  regions?: string[];
  /** SHA-256 (hex) of the canonical JSON of translations + purposes: proof of the text shown. */
  textHash: string;
  createdAt: string;
}

/** English plus the 22 languages of the Eighth Schedule (BCP-47 codes). */
export const LANGUAGES = [
  'en',
  'as',
  'bn',
  'brx',
  'doi',
  'gu',
  'hi',
  'kn',
  'ks',
  'kok',
  'mai',
  'ml',
  'mni',
  'mr',
  'ne',
  'or',
  'pa',
  'sa',
  'sat',
  'sd',
  'ta',
  'te',
  'ur',
] as const;
export type Language = (typeof LANGUAGES)[number];
