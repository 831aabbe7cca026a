import { z } from 'zod';
import { RECEIPT_PURPOSE } from './receipt.js';

/**
 * The consent receipt as the API answers it, for the OpenAPI document (docs/receipts.md). The
 * receipt is built by receipt.ts; this describes it.
 */
export const receiptSchema = z
  .object({
    receiptVersion: z.literal(1),
    alignedWith: z.literal('ISO/IEC TS 27560:2023'),
    issuedAt: z.string(),
    jurisdiction: z.literal('IN'),
    lawfulBasis: z.literal('consent'),
    transactionId: z.string(),
    referenceId: z.string(),
    controller: z.object({
      appId: z.string(),
      name: z.string(),
      contact: z.object({ email: z.string() }),
    }),
    notice: z
      .object({
        noticeId: z.string(),
        version: z.number().int(),
        textHash: z.string().describe('SHA-256 (hex) of the notice text shown'),
        processId: z.string().nullable(),
      })
      .nullable(),
    language: z.string().nullable(),
    region: z.string().optional(),
    collectedAt: z.string(),
    method: z.object({
      via: z.enum(['widget', 'api', 'portal']),
      mode: z.enum(['silent', 'granular']).optional(),
    }),
    status: z.string(),
    sequence: z
      .number()
      .int()
      .positive()
      .describe('data.sequence of the consent’s last event: the state this receipt attests'),
    expiresAt: z.string(),
    purposes: z.array(
      z.object({
        recordId: z.string(),
        purpose: z.string(),
        label: z.string().optional(),
        dataItems: z.array(z.string()),
        required: z.boolean(),
        state: z.string(),
        updatedAt: z.string(),
      }),
    ),
    history: z.array(
      z.object({
        at: z.string(),
        recordId: z.string(),
        purpose: z.string(),
        operation: z.string(),
        from: z.string().nullable(),
        to: z.string(),
        by: z.enum(['principal', 'controller', 'service']),
        via: z.string(),
      }),
    ),
    proof: z.object({
      alg: z.literal('EdDSA'),
      kid: z.string().describe('Key id in /.well-known/svc-keys.json'),
      purpose: z.literal(RECEIPT_PURPOSE),
      canonicalization: z.literal('RFC8785'),
      keys: z.string().describe('Where the public keys are published'),
      signature: z
        .string()
        .describe(
          `base64url Ed25519 over "${RECEIPT_PURPOSE}\\n" + RFC 8785 JSON of the receipt without proof.signature`,
        ),
    }),
  })
  .describe('A consent receipt signed by the service (ISO/IEC TS 27560 aligned)');
