import type { Handler } from '../../shared/bus/consumer.js';
import type { ComplianceFlag, FlagFacts } from '../../shared/domain/compliance/flags.js';
import type { PostbackMessage } from '../../shared/domain/compliance/postback.js';
import { getAppCached } from '../../shared/domain/apps.js';
import { AppError } from '../../shared/errors.js';
import { slaCheckEntry } from '../../shared/storage/ledger/flag-entries.js';
import { type ComplianceBase } from '../../shared/storage/ledger/postbacks.js';
import { retainUntilFor } from '../../shared/domain/ledger/retention.js';
import { backoffMs } from '../../shared/backoff.js';
import type { Runtime } from '../../shared/runtime.js';
import type { ComplianceMetrics } from './metrics.js';
import { postbacksTopicMessage } from './messages.js';
import { gaugeMembership, nextCheckAt, planFlagChanges } from './plan.js';

/** The consumer name in the idempotency table. */
export const CONSUMER = 'compliance';

/** Re-reads when the dispatch moves under a write (an attempt, or a busy counter item). */
const MAX_TRIES = 10;

interface Job {
  dispatchId: string;
  /** The instant to assess at. */
  evalAtMs: number;
  postback?: PostbackMessage;
  /** SLA checks schedule the next one; postbacks leave the chain of checks as it is. */
  scheduleNext: boolean;
}

/**
 * postbacks topic → the ledger. Two kinds of message, both keyed by dispatchId so one
 * dispatch's are handled in order: a postback (recorded once, by postbackId, then the flag
 * recomputed) and an SLA check from the timers worker (flag recomputed at that instant, next
 * check scheduled). This worker is the only writer of flags.
 */
export function postbacksHandler(
  rt: Runtime,
  o: { now: () => number; metrics: ComplianceMetrics },
): Handler {
  return async (raw, ctx) => {
    const parsed = postbacksTopicMessage.safeParse(raw);
    if (!parsed.success)
      throw new AppError(
        'SVC_VALIDATION_FAILED',
        `not a postback or SLA check: ${parsed.error.issues[0]?.message ?? ''}`,
      );
    const msg = parsed.data;
    if (msg.type === 'sla.check') {
      const at = Date.parse(msg.at);
      // Never assess before the instant the check was due, whatever this worker's clock says.
      const evalAtMs = Math.max(o.now(), Number.isNaN(at) ? 0 : at);
      await apply(rt, o.metrics, { dispatchId: msg.dispatchId, evalAtMs, scheduleNext: true });
      return;
    }
    const pb = msg;
    const evalAtMs = Math.max(o.now(), Date.parse(pb.receivedAt));
    const done = await apply(rt, o.metrics, {
      dispatchId: pb.dispatchId,
      evalAtMs,
      postback: pb,
      scheduleNext: false,
    });
    if (!done) ctx.log.debug({ postbackId: pb.postbackId }, 'postback already recorded');
  };
}

/** Read, plan, write; again on a lost race. Returns false for an already recorded postback. */
async function apply(rt: Runtime, m: ComplianceMetrics, job: Job): Promise<boolean> {
  for (let tries = 0; tries < MAX_TRIES; tries++) {
    // One read of the dispatch item, which summarises its postbacks and flags (summary.ts).
    const state = await rt.ledger.readComplianceState(job.dispatchId);
    if (!state) {
      if (!job.postback) {
        rt.log.warn({ dispatchId: job.dispatchId }, 'SLA check for an unknown dispatch; dropped');
        return true;
      }
      // The postback API checked the dispatch exists: this is not for this ledger.
      throw new AppError('SVC_NOT_FOUND', `postback for unknown dispatch ${job.dispatchId}`);
    }
    const { head, postbacks: recorded } = state;
    if (job.postback && recorded.some((p) => p.postbackId === job.postback!.postbackId))
      return false;
    const app = await getAppCached(rt, head.appId);
    const policy = app ? { slaTimeScale: app.slaTimeScale, graceMs: app.graceMs } : {};
    const facts: FlagFacts = {
      event: head.event,
      createdAt: head.createdAt,
      postbackDueAt: head.postbackDueAt,
      postbacks: [...recorded, ...(job.postback ? [job.postback] : [])],
    };
    const evalAt = new Date(job.evalAtMs);
    const base: ComplianceBase = {
      dispatchId: job.dispatchId,
      appId: head.appId,
      createdAt: head.createdAt,
      event: head.event,
      headHash: head.headHash,
      complianceFlag: (head.complianceFlag ?? null) as ComplianceFlag | null,
      awaitingPostback: head.awaitingPostback as boolean | undefined,
      nearDeadline: head.nearDeadline as boolean | undefined,
      flagCount: state.flagCount,
      postbacks: recorded,
      worstFlag: state.worstFlag,
      summaryStored: state.summaryStored,
    };
    const changes = planFlagChanges(
      facts,
      { flag: base.complianceFlag, at: state.lastFlagAt },
      evalAt,
      policy,
    );
    const next = job.scheduleNext ? nextCheckAt(facts, evalAt, policy) : null;
    const written = await rt.ledger.writeCompliance({
      base,
      ...(job.postback
        ? {
            postback: {
              message: job.postback,
              claim: rt.processed.claimItem(CONSUMER, job.postback.postbackId, job.evalAtMs),
            },
          }
        : {}),
      changes,
      gauges: gaugeMembership(facts, evalAt, policy),
      retainUntil: retainUntilFor(app),
      ...(next
        ? {
            next: slaCheckEntry(job.dispatchId, head.appId, next.getTime(), rt.config.TIMER_SHARDS),
          }
        : {}),
    });
    if (written.result === 'moved') {
      // Contention (an attempt, another partition on the same counter item): back off a little.
      await new Promise((r) => setTimeout(r, backoffMs(tries, { baseMs: 10, jitter: 'full' })));
      continue;
    }
    if (written.result === 'duplicate') return false;
    for (const c of changes) {
      m.transitions.inc({ flag: c.flag });
      if (c.flag === 'breach') m.breaches.inc({ event: head.event });
    }
    if (job.postback) {
      const flag = changes.at(-1)?.flag ?? base.complianceFlag ?? 'ok';
      m.postbacks.inc({ status: job.postback.status, flag });
      if (recorded.length === 0)
        m.timeToPostback.observe(
          { event: head.event },
          Math.max(0, Date.parse(job.postback.receivedAt) - Date.parse(head.createdAt)) / 1000,
        );
    }
    return true;
  }
  throw new AppError('SVC_UNAVAILABLE', `dispatch ${job.dispatchId} kept changing; retrying`, {
    retryAfterS: 1,
  });
}
