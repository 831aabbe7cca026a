import { z } from 'zod';
import { patterns } from '../ids.js';
import { POSTBACK_RISKS, POSTBACK_STATUSES } from './flags.js';

/**
 * The postback (docs/api.md, Postbacks): the HTTP body the app sends, and the Kafka message the
 * postback service hands to the compliance worker. Both live here because the service and the
 * worker must agree on them and may not import each other.
 */

export const MAX_TAGS = 32;
export const MAX_ACTIONS = 32;
export const MAX_LABEL = 64;
export const MAX_REMARK = 2000;

const label = z.string().min(1).max(MAX_LABEL);

/**
 * ISO 8601 in UTC with exactly three fractional digits (`2026-01-02T03:04:05.678Z`). zod's
 * check also refuses impossible dates such as 30 February.
 */
export const utcMillis = z.iso.datetime({
  precision: 3,
  error: 'must be an ISO 8601 UTC time with milliseconds, like 2026-01-02T03:04:05.678Z',
});

const remarkGiven = (b: { status: unknown; remark?: unknown }) =>
  b.status !== 'failed' ||
  // A non-string remark already has its own type error; do not report it twice.
  (b.remark !== undefined && (typeof b.remark !== 'string' || b.remark.trim() !== ''));

export const postbackBody = z
  .strictObject({
    /** The `X-SVC-Dispatch-ID` of the webhook being answered. */
    dispatchId: z.string().regex(patterns.dispatchId, 'must be dsp_ followed by a ULID'),
    referenceId: z
      .string()
      .regex(patterns.referenceId, 'must be SVC-REF- followed by 8 characters of 0-9A-Z'),
    status: z.enum(POSTBACK_STATUSES),
    /** When the app finished the work (the app's clock; SLA timing uses the service's). */
    completedAt: utcMillis,
    risk: z.enum(POSTBACK_RISKS),
    tags: z.array(label).max(MAX_TAGS).default([]),
    actions: z
      .array(z.strictObject({ type: label, result: label }))
      .max(MAX_ACTIONS)
      .default([]),
    /** Required when `status` is `failed`: silence and unexplained failures both count against the app. */
    remark: z.string().max(MAX_REMARK).optional(),
  })
  // Runs even when other fields fail, so one answer lists every problem.
  .refine(remarkGiven, {
    path: ['remark'],
    message: 'is required when status is failed',
    when: (p) => typeof p.value === 'object' && p.value !== null,
  });

export type PostbackBody = z.output<typeof postbackBody>;

/** The 202 answer: a receipt the app can quote. */
export const postbackReceipt = z.object({
  dispatchId: z.string(),
  receivedAt: z.string(),
  postbackId: z.string().regex(/^pb_[0-9A-HJKMNP-TV-Z]{26}$/),
});
export type PostbackReceipt = z.infer<typeof postbackReceipt>;

/**
 * The message on the postbacks topic, keyed by dispatchId (so one dispatch's postbacks stay in
 * order). `postbackId` is unique per accepted postback: the consumer's idempotency key. `type`
 * tells it apart from the SLA checks on the same topic (workers/compliance/messages.ts).
 */
export const postbackMessage = z.object({
  type: z.literal('postback'),
  dispatchId: z.string(),
  referenceId: z.string(),
  status: z.enum(POSTBACK_STATUSES),
  completedAt: z.string(),
  risk: z.enum(POSTBACK_RISKS),
  tags: z.array(z.string()),
  actions: z.array(z.object({ type: z.string(), result: z.string() })),
  remark: z.string().optional(),
  appId: z.string(),
  postbackId: z.string(),
  receivedAt: z.string(),
});
export type PostbackMessage = z.infer<typeof postbackMessage>;
