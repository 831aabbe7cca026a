import { z } from 'zod';
import {
  MAX_BULK_IDS,
  TRANSACTION_STATUSES,
  transactionSchema,
} from '../../shared/domain/consent/index.js';
import { patterns } from '../../shared/domain/ids.js';

/**
 * Query, bodies and responses of the public consent-management API (docs/api.md, Public
 * consent API).
 */

export const referenceId = z
  .string()
  .regex(patterns.referenceId, 'a reference id like SVC-REF-XXXXXXXX');

export const listQuery = z.object({
  referenceId,
  limit: z.coerce.number().int().min(1).max(100).default(20),
  /** nextCursor of the previous page. */
  cursor: z.string().min(1).max(2048).optional(),
});

/**
 * Naming the principal is optional on single-item calls; when given, the item must be theirs.
 * A browser's principal token names it in any case (services/public-api principalFor).
 */
export const principalQuery = z.object({ referenceId: referenceId.optional() });
export const operationBody = z.strictObject({ referenceId: referenceId.optional() });

const ids = z.array(z.string().min(1).max(100)).max(MAX_BULK_IDS);

export const bulkBody = z
  .strictObject({
    referenceId,
    transactionIds: ids.optional(),
    recordIds: ids.optional(),
  })
  .refine((b) => (b.transactionIds?.length ?? 0) + (b.recordIds?.length ?? 0) <= MAX_BULK_IDS, {
    message: `at most ${MAX_BULK_IDS} ids in total`,
    path: ['transactionIds'],
  });

/**
 * The app's server minting a browser token: at most 24 h, 1 h by default (docs/security.md,
 * Principal tokens).
 */
export const mintBody = z.strictObject({
  referenceId,
  ttlSeconds: z.number().int().min(1).max(86_400).optional(),
});

export const mintResponse = z.object({
  token: z.string(),
  expiresAt: z.string(),
});

export const listResponse = z.object({
  items: z.array(transactionSchema),
  nextCursor: z.string().nullable(),
});

export const bulkResponse = z.object({
  results: z.array(
    z.object({
      id: z.string(),
      ok: z.boolean(),
      status: z.enum(TRANSACTION_STATUSES).optional(),
      error: z.object({ code: z.string(), detail: z.string() }).optional(),
    }),
  ),
});
