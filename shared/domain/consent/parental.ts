import { z } from 'zod';
import { utcMillis } from '../compliance/postback.js';
import { AppError } from '../../errors.js';
import { applyOperation } from './apply.js';
import { toView, type ParentalVerification, type TransactionView } from './model.js';
import { mutateTransaction, type WriteContext } from './writer.js';

/**
 * Verifiable parental consent (Act s.9, Rule 10; docs/parental-and-inactivity.md). A capture
 * under a notice with `requiresParentalConsent` stores the chosen purposes as `pending` and
 * emits `consent.parental_verification_required`. The app verifies the parent (e.g. with a
 * DigiLocker virtual token) and reports the outcome here: `verified` grants every pending
 * purpose in one write (with the usual `consent.granted`), `failed` refuses them (`denied`, no
 * event: nothing was ever granted). Until then, and after a failure, nothing of the
 * transaction can be granted by any route (writer.ts).
 */

/** How the parent's identity and age were verified (Rule 10(1)). */
export const VERIFICATION_METHODS = [
  /** A virtual token issued through DigiLocker. */
  'digilocker',
  /** Another virtual token mapped to identity and age, issued by an entity entrusted by law. */
  'virtual_token',
  /** Reliable identity and age details the app already holds for the parent. */
  'fiduciary_records',
  /** Identity and age details the parent gave voluntarily. */
  'voluntary_details',
] as const;

/** How far `verifiedAt` may run ahead of our clock (app clocks drift). */
const MAX_SKEW_MS = 5 * 60_000;

export const parentalVerificationBody = z
  .strictObject({
    outcome: z.enum(['verified', 'failed']),
    method: z.enum(VERIFICATION_METHODS),
    /** The app's reference of the verification, e.g. the DigiLocker token reference. */
    reference: z.string().trim().min(1).max(200).optional(),
    /** When the verification was done (or failed), by the app's clock. */
    verifiedAt: utcMillis,
    /** Why the verification failed; required with `failed`. */
    remark: z.string().trim().min(1).max(2000).optional(),
  })
  .superRefine((b, ctx) => {
    if (b.outcome === 'verified' && b.reference === undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['reference'],
        message: 'is required when the outcome is verified',
      });
    if (b.outcome === 'failed' && b.remark === undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['remark'],
        message: 'is required when the outcome is failed',
      });
  });
export type ParentalVerificationInput = z.infer<typeof parentalVerificationBody>;

const invalid = (path: string, message: string) =>
  new AppError('SVC_VALIDATION_FAILED', 'The body is not valid', { errors: [{ path, message }] });

const settled = { verified: 'verified', failed: 'failed' } as const;

/**
 * Records the outcome of the parental verification of one transaction of the app (404 for
 * another app's or an unknown id). Repeating the outcome already recorded changes nothing and
 * answers the same state; the other outcome after one was recorded is 409.
 */
export async function settleParentalVerification(
  ctx: WriteContext,
  transactionId: string,
  input: ParentalVerificationInput,
): Promise<TransactionView> {
  const { rt, app } = ctx;
  const found = await rt.consents.loadTransaction(app.appId, transactionId);
  if (!found) throw new AppError('SVC_NOT_FOUND', 'Unknown transaction');
  if (!found.parental)
    throw new AppError(
      'SVC_CONFLICT',
      'This consent was not captured under a notice that requires parental consent',
    );
  const nowMs = (ctx.now?.() ?? new Date()).getTime();
  const verifiedAtMs = Date.parse(input.verifiedAt);
  if (verifiedAtMs > nowMs + MAX_SKEW_MS) throw invalid('/verifiedAt', 'is in the future');
  if (verifiedAtMs < Date.parse(found.parental.requestedAt) - MAX_SKEW_MS)
    throw invalid('/verifiedAt', 'is before the consent was captured');
  const wanted = settled[input.outcome];
  const { txn } = await mutateTransaction(
    ctx,
    () => rt.consents.loadTransactionAt(app.appId, found.referenceId, found.transactionId),
    (t, now) => {
      const p = t.parental!;
      if (p.status === wanted) return { records: t.records, changes: [] };
      if (p.status !== 'pending')
        throw new AppError('SVC_CONFLICT', `The parental verification was already ${p.status}`);
      const applied = applyOperation(
        t.records,
        input.outcome === 'verified' ? 'verify' : 'refuse',
        now,
      );
      const parental: ParentalVerification = {
        ...p,
        status: wanted,
        method: input.method,
        verifiedAt: input.verifiedAt,
        decidedAt: now,
        ...(input.reference !== undefined ? { reference: input.reference } : {}),
        ...(input.remark !== undefined ? { remark: input.remark } : {}),
      };
      return { ...applied, force: true, patch: { parental } };
    },
  );
  return toView(txn);
}
