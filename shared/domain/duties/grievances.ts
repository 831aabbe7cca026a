import { z } from 'zod';
import { DUTY_FLAGS } from './clock.js';
import { patterns } from '../ids.js';

/**
 * Grievances (DPDP Rule 14): a principal's complaint to the app, answered within the app's
 * response window (90 days at most, shorter if the app says so). Shapes stored and shown.
 */

export const DAY_MS = 86_400_000;
/** The longest response window the Rules allow, and the default. */
export const MAX_GRIEVANCE_DAYS = 90;

export const GRIEVANCE_CHANNELS = ['dashboard', 'portal', 'api'] as const;
export type GrievanceChannel = (typeof GRIEVANCE_CHANNELS)[number];

export const GRIEVANCE_RESOLUTIONS = ['resolved', 'rejected'] as const;

export const grievanceIdPattern = /^grv_[0-9A-HJKMNP-TV-Z]{26}$/;

const text = (max: number) =>
  z
    .string()
    .max(max)
    .refine((s) => s.trim().length > 0, 'must not be blank');

/** An ISO 8601 time with `Z` or an offset, normalised to `toISOString` form (the sort keys'). */
export const isoTime = z.iso
  .datetime({ offset: true, error: 'must be an ISO 8601 time like 2026-01-02T03:04:05.678Z' })
  .transform((v) => new Date(v).toISOString());

export const referenceId = z
  .string()
  .regex(patterns.referenceId, 'a reference id like SVC-REF-XXXXXXXX');

/** What a principal writes (dashboard, portal). */
export const fileBody = z.strictObject({
  subject: text(200),
  description: text(5_000),
});

/** The app filing for a principal, named by referenceId or by its own userId. */
export const appFileBody = fileBody
  .extend({
    referenceId: referenceId.optional(),
    userId: z.string().min(1).max(256).optional(),
  })
  .refine((b) => (b.referenceId === undefined) !== (b.userId === undefined), {
    message: 'name the principal by exactly one of referenceId and userId',
    path: ['referenceId'],
  });

export const answerBody = z.strictObject({
  answer: text(10_000),
  resolution: z.enum(GRIEVANCE_RESOLUTIONS).default('resolved'),
});

const flagChange = z.object({
  flag: z.enum(DUTY_FLAGS),
  at: z.string(),
  cause: z.string(),
});

/** The stored grievance, as the app and an auditor see it. */
export const grievanceSchema = z.object({
  grievanceId: z.string(),
  appId: z.string(),
  referenceId: z.string(),
  subject: z.string(),
  description: z.string(),
  filedVia: z.enum(GRIEVANCE_CHANNELS),
  status: z.enum(['open', 'answered']),
  createdAt: z.string(),
  /** The last instant an answer is on time. */
  dueAt: z.string(),
  /** From here on an unanswered grievance is flagged at_risk. */
  atRiskAt: z.string(),
  responseDays: z.number(),
  answer: z.string().nullable(),
  resolution: z.enum(GRIEVANCE_RESOLUTIONS).nullable(),
  answeredAt: z.string().nullable(),
  complianceFlag: z.enum(DUTY_FLAGS).nullable(),
  flagHistory: z.array(flagChange),
});
export type Grievance = z.infer<typeof grievanceSchema>;

/** What the principal sees of their own grievance: no flags, no app internals. */
export const principalGrievanceSchema = grievanceSchema.pick({
  grievanceId: true,
  referenceId: true,
  subject: true,
  description: true,
  filedVia: true,
  status: true,
  createdAt: true,
  dueAt: true,
  answer: true,
  resolution: true,
  answeredAt: true,
});
export type PrincipalGrievance = z.infer<typeof principalGrievanceSchema>;

export const toPrincipalView = (g: Grievance): PrincipalGrievance => ({
  grievanceId: g.grievanceId,
  referenceId: g.referenceId,
  subject: g.subject,
  description: g.description,
  filedVia: g.filedVia,
  status: g.status,
  createdAt: g.createdAt,
  dueAt: g.dueAt,
  answer: g.answer,
  resolution: g.resolution,
  answeredAt: g.answeredAt,
});

export const listQuery = z.object({
  status: z.enum(['open', 'answered']).optional(),
  flag: z.enum([...DUTY_FLAGS, 'none']).optional(),
  /** Times on createdAt: from inclusive, to exclusive. */
  from: isoTime.optional(),
  to: isoTime.optional(),
  limit: z.coerce.number().int().min(1).max(100).default(20),
  cursor: z.string().min(1).max(2048).optional(),
});
export type GrievanceListQuery = z.infer<typeof listQuery>;

export const principalListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  cursor: z.string().min(1).max(2048).optional(),
});

export const listResponse = z.object({
  items: z.array(grievanceSchema),
  nextCursor: z.string().nullable(),
});
export const principalListResponse = z.object({
  items: z.array(principalGrievanceSchema),
  nextCursor: z.string().nullable(),
});

export const settingsBody = z.strictObject({
  responseDays: z.number().int('must be a whole number of days').min(1),
});
export const settingsResponse = z.object({
  appId: z.string(),
  responseDays: z.number(),
  maxResponseDays: z.number(),
});
