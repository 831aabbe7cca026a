import { z } from 'zod';
import { FLAGS } from '../../shared/domain/compliance/flags.js';
import { EVENT_TYPES } from '../../shared/domain/consent/events.js';
import { patterns } from '../../shared/domain/ids.js';

/** Query and response schemas of the auditors' ledger API (docs/api.md, Ledger API). */

export const MAX_LIMIT = 200;
export const DEFAULT_LIMIT = 50;
/** The longest range one export may cover; longer audits are several exports. */
export const MAX_EXPORT_DAYS = 31;
const DAY_MS = 86_400_000;

/** `none` selects dispatches without a flag (awaiting a postback in time, or needing none). */
export const FLAG_FILTERS = [...FLAGS, 'none'] as const;

/**
 * A time on the event's createdAt: ISO 8601 with `Z` or an offset, or a date (midnight UTC).
 * Normalised to `toISOString` form, the form of the stored sort keys.
 */
const time = z
  .union([z.iso.datetime({ offset: true }), z.iso.date()], {
    error: 'must be an ISO 8601 time like 2026-01-02T03:04:05.678Z, or a date like 2026-01-02',
  })
  .transform((v) => new Date(v.length === 10 ? `${v}T00:00:00.000Z` : v).toISOString());

/** Range checks run when from and to themselves parsed, even if other parameters failed. */
const fromBeforeTo = {
  path: ['to'],
  message: 'must be after from',
  when: (p: { value: unknown; issues: { path?: PropertyKey[] }[] }) => {
    const v = p.value as { from?: unknown; to?: unknown };
    const timesOk = p.issues.every((i) => i.path?.[0] !== 'from' && i.path?.[0] !== 'to');
    return timesOk && typeof v.from === 'string' && typeof v.to === 'string';
  },
};

// Strict: a misspelt filter (`form=`) would otherwise widen an audit query silently.
export const listQuery = z
  .strictObject({
    referenceId: z
      .string()
      .regex(patterns.referenceId, 'must be SVC-REF- followed by 8 characters of 0-9A-Z')
      .optional()
      .describe('Only this principal’s dispatches'),
    event: z.enum(EVENT_TYPES).optional(),
    flag: z
      .enum(FLAG_FILTERS)
      .optional()
      .describe(
        'A dispatch whose current or worst flag (worstFlag) is this one; none = no flag now (null)',
      ),
    from: time.optional().describe('Event created at or after (inclusive)'),
    to: time.optional().describe('Event created before (exclusive)'),
    limit: z.coerce.number().int().min(1).max(MAX_LIMIT).default(DEFAULT_LIMIT),
    cursor: z
      .string()
      .min(1)
      .max(2048)
      .optional()
      .describe('nextCursor of the previous page, with the same filters'),
  })
  .refine((q) => q.from === undefined || q.to === undefined || q.from < q.to, fromBeforeTo);
export type ListQuery = z.output<typeof listQuery>;

export const exportQuery = z
  .strictObject({
    from: time.describe('Event created at or after (inclusive)'),
    to: time.describe(
      `Event created before (exclusive); at most ${MAX_EXPORT_DAYS} days after from`,
    ),
  })
  .refine((q) => q.from < q.to, fromBeforeTo)
  .refine((q) => Date.parse(q.to) - Date.parse(q.from) <= MAX_EXPORT_DAYS * DAY_MS, {
    path: ['to'],
    message: `must be at most ${MAX_EXPORT_DAYS} days after from`,
    when: fromBeforeTo.when,
  });
export type ExportQuery = z.output<typeof exportQuery>;

const flag = z.enum(FLAGS).nullable();
const deliveryStatus = z.enum(['pending', 'delivered', 'failed']);

export const attemptView = z.object({
  attempt: z.number().int(),
  trigger: z.enum(['first', 'retry', 'manual']),
  time: z.string(),
  durationMs: z.number(),
  destination: z.string().describe('Origin and path (never the query)'),
  statusCode: z.number().int().optional(),
  errorClass: z.string().optional(),
  errorMessage: z.string().optional(),
  responseExcerpt: z.string().describe('First 4 KiB of the response body'),
  outcome: z.enum(['delivered', 'failed']),
  deliveryStatus: deliveryStatus
    .optional()
    .describe('The dispatch’s status after this attempt (chained with it)'),
  prevHash: z.string(),
  hash: z.string(),
});

/** Written by the compliance worker; kept open so fields it adds reach auditors unchanged. */
export const postbackView = z.looseObject({
  postbackId: z.string().optional(),
  status: z.string().optional(),
  risk: z.string().optional(),
  completedAt: z.string().optional(),
  receivedAt: z.string().optional(),
});
export const flagChangeView = z.looseObject({
  flag,
  at: z.string(),
  cause: z.string(),
});
/** A flag change as chained: what verifying the chain recomputes. */
export const flagEntryView = z.looseObject({
  dispatchId: z.string(),
  seq: z.number().int().describe('1 for the first change, then one more for each'),
  flag,
  previous: flag,
  at: z.string(),
  cause: z.string(),
  prevHash: z.string(),
  hash: z.string(),
});

export const dispatchSummary = z.object({
  dispatchId: z.string(),
  eventId: z.string(),
  event: z.enum(EVENT_TYPES),
  appId: z.string(),
  environment: z.enum(['sandbox', 'live']),
  referenceId: z.string(),
  createdAt: z.string().describe('When the event was created (the SLA clock starts here)'),
  dispatchedAt: z.string(),
  deliveryStatus,
  attemptCount: z.number().int(),
  lastAttemptAt: z.string().nullable(),
  nextAttemptAt: z.string().nullable(),
  deliveredAt: z.string().nullable(),
  postbackRequired: z.boolean(),
  postbackDueAt: z.string().nullable(),
  complianceFlag: flag,
  worstFlag: flag.describe(
    'The most severe flag the dispatch ever had (ok < at_risk < breach < unconfirmed_erasure < critical); null while it never had one',
  ),
});
export type DispatchSummary = z.infer<typeof dispatchSummary>;

export const dispatchDetail = dispatchSummary.extend({
  sequence: z
    .number()
    .int()
    .positive()
    .nullable()
    .describe(
      'data.sequence of the event, read from the stored webhook body: its place among its consent’s events; null when the stored body cannot be read',
    ),
  bodySha256: z.string().describe('SHA-256 of the webhook body as sent'),
  entryHash: z.string().describe('Hash of the creation entry, the first link of the chain'),
  headHash: z.string().describe('Hash of the last entry of the chain'),
  attempts: z.array(attemptView),
  postbacks: z.array(postbackView),
  flagHistory: z.array(flagChangeView),
  flagEntries: z
    .array(flagEntryView)
    .describe('The same changes as chained entries (seq, previous flag, prevHash, hash)'),
});
export type DispatchDetail = z.infer<typeof dispatchDetail>;

export const listResponse = z.object({
  items: z.array(dispatchSummary),
  nextCursor: z.string().nullable(),
});

export const finding = z.object({
  dispatchId: z.string().optional(),
  seq: z.number().int().optional().describe('The checkpoint concerned'),
  at: z.string().optional().describe('Where: a sort key, an export position or a head field'),
  reason: z.string(),
});

export const verifyResponse = z.object({
  dispatchId: z.string(),
  ok: z
    .boolean()
    .describe('Chain intact, head fields agree with the entries, sealed entries present'),
  entries: z.number().int().describe('Entries stored for the dispatch, its creation included'),
  headHash: z.string(),
  brokenAt: z
    .string()
    .optional()
    .describe('Sort key of the first entry that fails (DSP, ATT#…), or the failing head field'),
  reason: z.string().optional(),
  failures: z.array(finding),
  seal: z
    .object({
      checkpoint: z.number().int().describe('seq of the checkpoint in force for its period'),
      periodStart: z.string(),
      periodEnd: z.string(),
      sealedHead: z.string().describe('The chain head that checkpoint sealed'),
      entriesAfter: z.number().int().describe('Entries chained since (not vouched for yet)'),
    })
    .nullable()
    .describe('null while the dispatch’s period (or the dispatch) is not sealed yet'),
});
export type VerifyResponse = z.infer<typeof verifyResponse>;

export const rangeVerifyResponse = z.object({
  ok: z.boolean(),
  appId: z.string().nullable(),
  from: z.string(),
  to: z.string(),
  dispatches: z.number().int(),
  checkpoints: z.number().int().describe('Checkpoints read (the chain segment the range needs)'),
  sealedThrough: z
    .string()
    .nullable()
    .describe('Every period of the app up to this instant has been sealed'),
  sealed: z.number().int().describe('Dispatches whose every entry a checkpoint vouches for'),
  failureCount: z.number().int(),
  failures: z.array(finding).describe('The first 1,000'),
  unsealedCount: z.number().int(),
  unsealed: z
    .array(
      z.object({
        dispatchId: z.string(),
        reason: z.string(),
        entries: z.number().int().optional(),
      }),
    )
    .describe('The first 100 dispatches with entries no checkpoint vouches for yet'),
});
export type RangeVerifyResponse = z.infer<typeof rangeVerifyResponse>;
