import type { App } from '../../shared/domain/types.js';
import type { RecordAttempt } from '../../shared/storage/ledger/attempts.js';
import type { DispatchState } from '../../shared/storage/ledger/dispatches.js';
import { retainUntilFor } from '../../shared/domain/ledger/retention.js';
import { dueEntry, type DueEntry } from '../../shared/storage/timers/due.js';
import type { AttemptResult } from '../../shared/webhooks/client.js';
import { nextStep } from '../../shared/webhooks/schedule.js';

/** What one finished attempt leads to; `settle` (attempt.ts) carries it out. */
export interface SettlePlan {
  /** The ledger entry and the dispatch's status after it. */
  record: RecordAttempt;
  /** The next automatic attempt, when one is scheduled (also in `record`). */
  next: DueEntry | undefined;
  /** When the attempt ended: the instant its outcome counts at. */
  endMs: number;
  /** The `outcome` label of the delivery metrics. */
  outcome: string;
  /** Whether the attempt's duration says anything about the endpoint (a request was made). */
  observeDuration: boolean;
  /** Event created → first 2xx, in seconds, when this attempt delivered it. */
  endToEndS: number | undefined;
  /** How the endpoint's health moves: `gone` (410) disables it at once; none when not asked. */
  health: 'success' | 'failure' | 'gone' | undefined;
}

/** Origin and path of the URL attempted (never its query, which may hold tokens). */
export function destinationOf(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname}`;
  } catch {
    return '(invalid URL)';
  }
}

/**
 * Only a public receiver's reply is kept: an allowlisted private or a loopback one would let
 * whoever sets the URL read internal services through the ledger API.
 */
const keptExcerpt = (r: AttemptResult) => (r.peer === 'global' ? r.responseExcerpt : '');

/**
 * The decisions that follow an attempt, as a pure function of the dispatch, the app as read
 * at send time, and the attempt's result: the retry step (shared/webhooks/schedule.ts), the
 * ledger entry, what the metrics observe and how the endpoint's health moves.
 */
export function planSettle(
  job: { state: DispatchState; trigger: 'first' | 'retry' | 'manual' },
  app: Pick<App, 'webhookUrl' | 'slaTimeScale' | 'ledgerRetentionDays'> | undefined,
  result: AttemptResult,
  o: { shards: number; random: () => number },
): SettlePlan {
  const s = job.state;
  const endMs = result.startedAtMs + result.durationMs;
  const step = nextStep({
    ok: result.ok,
    statusCode: result.statusCode,
    errorClass: result.errorClass,
    retryAfter: result.retryAfter,
    attempt: s.attempts + 1,
    prevStatus: s.deliveryStatus,
    timeScale: app?.slaTimeScale ?? 1,
    nowMs: endMs,
    random: o.random,
  });
  const next =
    step.retryInMs === undefined
      ? undefined
      : dueEntry(s.dispatchId, s.appId, endMs + step.retryInMs, 'attempt', o.shards);
  const record: RecordAttempt = {
    state: s,
    entry: {
      trigger: job.trigger,
      time: new Date(result.startedAtMs).toISOString(),
      durationMs: result.durationMs,
      destination: app ? destinationOf(app.webhookUrl) : '',
      ...(result.statusCode !== undefined ? { statusCode: result.statusCode } : {}),
      ...(result.errorClass ? { errorClass: result.errorClass } : {}),
      ...(result.errorMessage ? { errorMessage: result.errorMessage.slice(0, 500) } : {}),
      responseExcerpt: keptExcerpt(result),
      outcome: result.ok ? 'delivered' : 'failed',
    },
    deliveryStatus: step.deliveryStatus,
    ...(next ? { next } : {}),
    retainUntil: retainUntilFor(app, endMs),
  };
  const skipped = result.errorClass === 'endpoint_disabled' || result.errorClass === 'app_missing';
  return {
    record,
    next,
    endMs,
    outcome: result.ok ? 'delivered' : (result.errorClass ?? 'http'),
    observeDuration: !result.refused && !skipped,
    endToEndS:
      result.ok && s.deliveryStatus !== 'delivered'
        ? Math.max(0, endMs - Date.parse(s.createdAt)) / 1000
        : undefined,
    health:
      !app || result.errorClass === 'endpoint_disabled'
        ? undefined
        : result.ok
          ? 'success'
          : step.disable === 'gone'
            ? 'gone'
            : 'failure',
  };
}
