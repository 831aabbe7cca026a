import { AppError, type FieldError } from '../../errors.js';
import type { ConsentDeps } from './deps.js';
import type { App, NoticeVersion } from '../types.js';
import { parentalRequiredEvent, type EventContext } from './events.js';
import { MAX_RECORDS, type ConsentRecord } from './model.js';
import {
  createInPrincipal,
  createWithPrincipal,
  newTransactionId,
  recordIdsFor,
} from './writer.js';

const DAY_MS = 86_400_000;

/** A capture with nothing pending (every purpose refused) needs no verification either. */
const parentalEvents = (c: EventContext) =>
  c.txn.records.some((r) => r.state === 'pending') ? [parentalRequiredEvent(c)] : [];

export interface CaptureInput {
  mode: 'silent' | 'granular';
  /** Purpose names the visitor granted; ignored in silent mode (everything is granted). */
  granted: string[];
  language: string;
  pageUrl: string;
  userAgent: string;
  /** Keyed hash of the client IP (never the raw IP). */
  ipHash: string;
  /**
   * The visitor's state or union territory the page named (current ISO 3166-2:IN code), which
   * chose `notice` among those of its trigger key (docs/api.md, Regions).
   */
  region?: string | undefined;
  /**
   * Capture for a known principal (a returning visitor) instead of a new one: the transaction
   * is added to that principal (404 when it does not exist). Pass only a referenceId the
   * caller trusts (e.g. remembered by the widget for this site), never one a page could choose
   * freely for another person.
   */
  referenceId?: string | undefined;
}

export interface CaptureResult {
  transactionId: string;
  referenceId: string;
  expiresAt: string;
  /** Under a notice that requires verifiable parental consent: nothing is granted yet. */
  parentalVerification?: 'pending';
}

/**
 * Pure: the records of a capture, or the 422 field errors. Under a notice that requires
 * verifiable parental consent, the purposes chosen are `pending` instead of `granted`.
 */
export function captureRecords(
  notice: Pick<NoticeVersion, 'purposes' | 'translations' | 'requiresParentalConsent'>,
  input: Pick<CaptureInput, 'mode' | 'granted' | 'language'>,
  now: string,
  newId: () => string,
): ConsentRecord[] {
  const declared = new Set(notice.purposes.map((p) => p.name));
  const errors: FieldError[] = [];
  if (!Object.hasOwn(notice.translations, input.language))
    errors.push({ path: '/language', message: 'the notice has no text in this language' });
  const granted = new Set(input.mode === 'silent' ? declared : input.granted);
  input.granted.forEach((name, i) => {
    if (!declared.has(name))
      errors.push({ path: `/purposes/${i}`, message: `${name} is not a purpose of this notice` });
  });
  for (const p of notice.purposes)
    if (p.required && !granted.has(p.name))
      errors.push({ path: '/purposes', message: `${p.name} is required and must be granted` });
  if (notice.purposes.length > MAX_RECORDS)
    errors.push({
      path: '/purposes',
      message: `a notice may have at most ${MAX_RECORDS} purposes`,
    });
  if (errors.length > 0)
    throw new AppError('SVC_VALIDATION_FAILED', 'The consent capture is not valid', { errors });
  const chosen = notice.requiresParentalConsent ? 'pending' : 'granted';
  return notice.purposes.map((p) => ({
    recordId: newId(),
    purpose: p.name,
    state: granted.has(p.name) ? chosen : 'denied',
    updatedAt: now,
  }));
}

/**
 * The widget's capture: a new principal and a new transaction under `notice`, with proof of
 * what was shown; emits consent.created (+ consent.granted when anything was granted). Under a
 * notice that requires verifiable parental consent nothing is granted: the chosen purposes are
 * pending and `consent.parental_verification_required` is emitted in the same write.
 */
export async function captureConsent(
  rt: ConsentDeps,
  app: App,
  notice: NoticeVersion,
  input: CaptureInput,
): Promise<CaptureResult> {
  // Validate before any write so a bad capture leaves nothing behind.
  captureRecords(notice, input, new Date().toISOString(), recordIdsFor(newTransactionId()));
  const parental = notice.requiresParentalConsent === true;
  const events = parental ? parentalEvents : undefined;
  const build = (_ref: string, now: string, transactionId: string) => {
    return {
      appId: app.appId,
      transactionId,
      processId: notice.triggerKey,
      noticeId: notice.noticeId,
      noticeVersion: notice.version,
      language: input.language,
      source: 'widget' as const,
      createdAt: now,
      updatedAt: now,
      expiresAt: new Date(Date.parse(now) + notice.validityDays * DAY_MS).toISOString(),
      records: captureRecords(notice, input, now, recordIdsFor(transactionId)),
      ...(parental ? { parental: { status: 'pending' as const, requestedAt: now } } : {}),
      proof: {
        noticeVersion: notice.version,
        textHash: notice.textHash,
        language: input.language,
        capturedAt: now,
        pageUrl: input.pageUrl,
        userAgent: input.userAgent,
        ipHash: input.ipHash,
        mode: input.mode,
        ...(input.region !== undefined ? { region: input.region } : {}),
      },
    };
  };
  const ctx = { rt, app, actor: { source: 'widget' as const, credential: 'siteKey' } };
  const txn =
    input.referenceId === undefined
      ? await createWithPrincipal(ctx, {
          principal: {},
          build,
          reminderDaysBefore: notice.reminderDaysBefore,
          events,
        })
      : await createInPrincipal(ctx, input.referenceId, build, notice.reminderDaysBefore, events);
  return {
    transactionId: txn.transactionId,
    referenceId: txn.referenceId,
    expiresAt: txn.expiresAt,
    ...(parental ? { parentalVerification: 'pending' as const } : {}),
  };
}
