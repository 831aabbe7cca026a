import { z } from 'zod';
import { MAX_RECORDS, purposeName, transactionSchema } from '../../shared/domain/consent/index.js';

/**
 * Bodies and responses of the record API (docs/api.md, Consent record API): validation, types
 * and OpenAPI.
 */

/** Ids an app's own user table might use: e-mails, UUIDs, `auth0|…`; no spaces or slashes. */
export const userId = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9._@:+|=~-]+$/, 'letters, digits and . _ @ : + | = ~ - only');

const consents = z
  .record(purposeName, z.boolean(), {
    error: (iss) =>
      iss.code === 'invalid_key'
        ? 'purpose names match ^[a-z][a-z0-9_]{0,63}$ (not "constructor")'
        : undefined,
  })
  .refine((c) => Object.keys(c).length <= MAX_RECORDS, `at most ${MAX_RECORDS} purposes`);

const email = z.email().max(320);

export const createBody = z.strictObject({
  userId,
  email,
  /** purpose → granted. */
  consents,
  /** A transaction id from an earlier widget capture of this app, to link to this user. */
  consentId: z.string().min(1).max(100).optional(),
});

export const updateBody = z.strictObject({
  consents: consents.optional(),
  email: email.optional(),
});

export const recordResponse = z.object({
  userId: z.string(),
  email: z.string().nullable(),
  referenceId: z.string(),
  consents: z.record(z.string(), z.boolean()),
  status: z.enum(['active', 'withdrawn', 'pending']),
  transactionId: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
  expiresAt: z.string(),
});

/** What a write answers to an API key without consents:read: what it did, nothing it could read. */
export const writeReceipt = z.object({
  userId: z.string(),
  referenceId: z.string(),
  transactionId: z.string(),
  updatedAt: z.string(),
});

export const writeResponse = z.union([recordResponse, writeReceipt]);

/** The parental verification route: the transaction, or with a write-only key a receipt. */
export const parentalVerificationResponse = z.union([
  transactionSchema,
  transactionSchema.pick({ transactionId: true, referenceId: true, parentalVerification: true }),
]);
