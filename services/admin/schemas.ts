import { z } from 'zod';
import { API_KEY_SCOPES } from '../../shared/domain/apiKeys.js';
import { patterns } from '../../shared/domain/ids.js';
import { MAX_INACTIVITY_DAYS, MIN_INACTIVITY_DAYS } from '../../shared/domain/consent/activity.js';
import { noticeRuleErrors } from '../../shared/domain/notices.js';
import { REGIONS } from '../../shared/domain/regions.js';
import { LANGUAGES } from '../../shared/domain/types.js';
import {
  MAX_RETENTION_DAYS,
  MIN_RETENTION_DAYS,
  RETENTION_RULE,
} from '../../shared/domain/ledger/retention.js';

/** Request bodies of the admin API (the single source for validation and OpenAPI). */

function httpUrl(s: string): URL | undefined {
  try {
    const u = new URL(s);
    return (u.protocol === 'https:' || u.protocol === 'http:') && !u.username && !u.password
      ? u
      : undefined;
  } catch {
    return undefined;
  }
}

/** Exactly what a browser sends as Origin: scheme, host, optional port; no path or slash. */
export const isOrigin = (s: string) => httpUrl(s)?.origin === s;

const origin = z
  .string()
  .max(300)
  .refine(
    isOrigin,
    'must be an origin like https://shop.example (scheme, host and optional port, no path)',
  );
const url = z
  .string()
  .max(2000)
  .refine((s) => httpUrl(s) !== undefined, 'must be an http(s) URL');
const portalUrlTemplate = z
  .string()
  .max(2000)
  .refine(
    (s) =>
      s.includes('{referenceId}') &&
      httpUrl(s.replaceAll('{referenceId}', 'SVC-REF-X')) !== undefined,
    'must be an http(s) URL containing {referenceId}',
  );
const text = (max: number) =>
  z
    .string()
    .max(max)
    .refine((s) => s.trim().length > 0, 'must not be blank');

const appFields = {
  name: text(200),
  webhookUrl: url,
  allowedOrigins: z
    .array(origin)
    .max(100)
    .transform((a) => [...new Set(a)]),
  contactEmail: z.email().max(320),
  slaTimeScale: z.number().min(1).max(1_000_000),
  /** docs/parental-and-inactivity.md: the principal is warned by e-mail first. */
  inactivityErasureDays: z
    .number()
    .int('must be a whole number of days')
    .min(
      MIN_INACTIVITY_DAYS,
      `must be at least ${MIN_INACTIVITY_DAYS} days: the principal is warned 3 days before the erasure`,
    )
    .max(MAX_INACTIVITY_DAYS, `must be at most ${MAX_INACTIVITY_DAYS} days`)
    .describe(
      `Erase a principal's data after this many days without activity, e-mailing them 3 days before (${MIN_INACTIVITY_DAYS}–${MAX_INACTIVITY_DAYS}; absent: never)`,
    ),
  /** docs/webhooks.md, Ordering. */
  webhookOrdering: z
    .enum(['independent', 'principal'])
    .describe(
      "How webhooks are ordered: 'independent' (default), each event on its own; 'principal', a principal's later events wait while an earlier one of that principal is retried",
    ),
  /** docs/retention.md: never below a year. */
  ledgerRetentionDays: z
    .number()
    .int('must be a whole number of days')
    .min(MIN_RETENTION_DAYS, `must be at least ${MIN_RETENTION_DAYS} days: ${RETENTION_RULE}`)
    .max(MAX_RETENTION_DAYS, `must be at most ${MAX_RETENTION_DAYS} days (ten years)`)
    .describe(
      `Days the ledger keeps dispatches, delivery attempts, postbacks and flag changes after their last change (${MIN_RETENTION_DAYS}–${MAX_RETENTION_DAYS}, default ${MIN_RETENTION_DAYS})`,
    ),
};

export const createAppBody = z.strictObject({
  ...appFields,
  environment: z.enum(['sandbox', 'live']),
  portalUrlTemplate: portalUrlTemplate.optional(),
  slaTimeScale: appFields.slaTimeScale.optional(),
  ledgerRetentionDays: appFields.ledgerRetentionDays.optional(),
  inactivityErasureDays: appFields.inactivityErasureDays.optional(),
  webhookOrdering: appFields.webhookOrdering.optional(),
});

export const patchAppBody = z.strictObject({
  name: appFields.name.optional(),
  webhookUrl: appFields.webhookUrl.optional(),
  allowedOrigins: appFields.allowedOrigins.optional(),
  contactEmail: appFields.contactEmail.optional(),
  slaTimeScale: appFields.slaTimeScale.optional(),
  ledgerRetentionDays: appFields.ledgerRetentionDays.optional(),
  /** null removes the custom template (the hosted portal is used again). */
  portalUrlTemplate: portalUrlTemplate.nullable().optional(),
  /** null removes the inactivity policy (nobody is erased for inactivity). */
  inactivityErasureDays: appFields.inactivityErasureDays.nullable().optional(),
  webhookOrdering: appFields.webhookOrdering.optional(),
  environment: z
    .never({ error: 'cannot be changed here; a sandbox app goes live through go-live' })
    .optional(),
});

export const createApiKeyBody = z.strictObject({
  name: text(100),
  scopes: z.array(z.enum(API_KEY_SCOPES)).min(1).max(API_KEY_SCOPES.length),
});

const purpose = z.strictObject({
  name: z.string().regex(patterns.purpose, 'must match ^[a-z][a-z0-9_]{0,63}$ (not "constructor")'),
  required: z.boolean().default(false),
  dataItems: z.array(text(100)).max(50).default([]),
});

const translation = z.strictObject({
  title: text(300),
  body: text(20_000),
  purposes: z.record(z.string(), z.strictObject({ label: text(200), description: text(2000) })),
});

const DEFAULT_REMINDER_DAYS = 30;

/** A complete notice (POST creates version 1, PUT makes the next version). */
export const noticeBody = z
  .strictObject({
    kind: z.enum(['data_collection', 'cookie']),
    triggerKey: z
      .string()
      .max(100)
      .regex(patterns.triggerKey, 'must be lowercase words joined by underscores'),
    defaultLanguage: z.enum(LANGUAGES),
    purposes: z.array(purpose).min(1).max(50),
    translations: z.record(z.string(), translation),
    validityDays: z.number().int().min(1).max(3650).default(365),
    reminderDaysBefore: z.number().int().min(0).max(3649).optional(),
    /**
     * ISO 3166-2:IN codes of the states and union territories where this notice is shown;
     * absent: everywhere no other notice of the trigger key covers (docs/api.md, Regions).
     */
    regions: z.array(z.string().max(8)).max(REGIONS.length).optional(),
    /**
     * Capture needs verifiable parental consent (the notice is for children): the chosen
     * purposes stay pending until the app confirms the parent's verification.
     */
    requiresParentalConsent: z.boolean().optional(),
  })
  // A default of 30 days cannot hold for a window of 30 days or less: use the day before.
  .transform((n) => ({
    ...n,
    reminderDaysBefore: n.reminderDaysBefore ?? Math.min(DEFAULT_REMINDER_DAYS, n.validityDays - 1),
  }))
  .superRefine((n, ctx) => {
    for (const e of noticeRuleErrors(n))
      ctx.addIssue({ code: 'custom', path: e.path.split('/').slice(1), message: e.message });
  });

export const noticeQuery = z.object({ version: z.coerce.number().int().min(1).optional() });

/** Response shapes, for the OpenAPI document. */
export const appSchema = z.object({
  appId: z.string(),
  name: z.string(),
  environment: z.enum(['sandbox', 'live']),
  webhookUrl: z.string(),
  allowedOrigins: z.array(z.string()),
  contactEmail: z.string(),
  portalUrlTemplate: z.string().optional(),
  slaTimeScale: z.number(),
  siteKey: z.string(),
  secretVersion: z.number(),
  widgetVerifiedAt: z.string().nullable(),
  widgetVerifiedOrigin: z.string().optional(),
  goLiveAt: z.string().nullable().optional(),
  /** After go-live: the sandbox app's live twin, or the live app's sandbox; who made it live. */
  liveAppId: z.string().optional(),
  sandboxAppId: z.string().optional(),
  goLiveBy: z.string().optional(),
  ledgerRetentionDays: z.number().optional(),
  inactivityErasureDays: z.number().optional(),
  webhookOrdering: z.enum(['independent', 'principal']),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export const apiKeySchema = z.object({
  id: z.string(),
  name: z.string(),
  scopes: z.array(z.enum(API_KEY_SCOPES)),
  createdAt: z.string(),
  revokedAt: z.string().nullable(),
});

export const noticeSchema = z.object({
  appId: z.string(),
  noticeId: z.string(),
  version: z.number(),
  kind: z.enum(['data_collection', 'cookie']),
  triggerKey: z.string(),
  defaultLanguage: z.string(),
  purposes: z.array(
    z.object({ name: z.string(), required: z.boolean(), dataItems: z.array(z.string()) }),
  ),
  translations: z.record(
    z.string(),
    z.object({
      title: z.string(),
      body: z.string(),
      purposes: z.record(z.string(), z.object({ label: z.string(), description: z.string() })),
    }),
  ),
  validityDays: z.number(),
  reminderDaysBefore: z.number(),
  regions: z.array(z.string()).optional(),
  requiresParentalConsent: z.boolean().optional(),
  textHash: z.string(),
  createdAt: z.string(),
});
