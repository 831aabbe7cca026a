import { z } from 'zod';
import { DUTY_FLAGS } from './clock.js';
import { isoTime, referenceId } from './grievances.js';

/**
 * Personal data breaches (DPDP Rule 7): what the app records, what each affected principal is
 * told (the five contents of Rule 7(1)), and the 72-hour report to the Data Protection Board.
 */

export const BOARD_REPORT_WINDOW_MS = 72 * 3_600_000;
/** Affected principals one request may name; more are added with further requests. */
export const MAX_PRINCIPALS_PER_REQUEST = 1_000;
/** Principals per stored batch and per notification message (the notifier mails a batch). */
export const BATCH_SIZE = 100;
/** A detection time this far ahead of the service's clock is refused as a mistake. */
export const CLOCK_SKEW_MS = 5 * 60_000;

export const breachIdPattern = /^brc_[0-9A-HJKMNP-TV-Z]{26}$/;

const text = (max: number) =>
  z
    .string()
    .max(max)
    .refine((s) => s.trim().length > 0, 'must not be blank');

export const affectedPrincipal = z
  .strictObject({
    userId: z.string().min(1).max(256).optional(),
    referenceId: referenceId.optional(),
  })
  .refine((p) => p.userId !== undefined || p.referenceId !== undefined, {
    message: 'name the principal by userId and/or referenceId',
  });

const principals = z
  .array(affectedPrincipal)
  .max(
    MAX_PRINCIPALS_PER_REQUEST,
    `at most ${MAX_PRINCIPALS_PER_REQUEST} per request; add more with POST …/breaches/{breachId}/principals`,
  );

export const contactSchema = z.strictObject({
  name: text(200),
  email: z.email().max(320),
  phone: z.string().max(40).optional(),
});

export const recordBody = z.strictObject({
  /** What happened: nature, extent, timing and location of the breach. */
  description: text(10_000),
  /** The consequences likely for the principals. */
  consequences: text(5_000),
  /** What the app has done and is doing to mitigate the risk. */
  mitigations: text(5_000),
  /** The safety measures principals can take themselves. */
  steps: text(5_000),
  /** Who can answer principals' questions about the breach. */
  contact: contactSchema,
  detectedAt: isoTime,
  principals: principals.default([]),
});
export type RecordBreachInput = z.infer<typeof recordBody>;

export const addPrincipalsBody = z.strictObject({ principals: principals.min(1) });

export const boardReportBody = z.strictObject({
  /** The Board's acknowledgement or the app's own reference for the report. */
  reference: z.string().max(200).optional(),
  note: z.string().max(2_000).optional(),
});

const flagChange = z.object({ flag: z.enum(DUTY_FLAGS), at: z.string(), cause: z.string() });

export const breachSchema = z.object({
  breachId: z.string(),
  appId: z.string(),
  description: z.string(),
  consequences: z.string(),
  mitigations: z.string(),
  steps: z.string(),
  contact: contactSchema,
  detectedAt: z.string(),
  createdAt: z.string(),
  affectedCount: z.number(),
  batches: z.number(),
  boardReport: z.object({
    /** The last instant the report to the Board is on time (detectedAt + 72 h). */
    dueAt: z.string(),
    atRiskAt: z.string(),
    filedAt: z.string().nullable(),
    reference: z.string().nullable(),
    note: z.string().nullable(),
  }),
  complianceFlag: z.enum(DUTY_FLAGS).nullable(),
  flagHistory: z.array(flagChange),
});
export type Breach = z.infer<typeof breachSchema>;

export interface Affected {
  referenceId: string;
  userId: string | null;
}

export const listQuery = z.object({
  flag: z.enum([...DUTY_FLAGS, 'none']).optional(),
  from: isoTime.optional(),
  to: isoTime.optional(),
  limit: z.coerce.number().int().min(1).max(100).default(20),
  cursor: z.string().min(1).max(2048).optional(),
});
export type BreachListQuery = z.infer<typeof listQuery>;

export const listResponse = z.object({
  items: z.array(breachSchema),
  nextCursor: z.string().nullable(),
});
