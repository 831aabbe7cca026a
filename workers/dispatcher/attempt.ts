import { getAppCached, getAppSecretKey } from '../../shared/domain/apps.js';
import { cached } from '../../shared/domain/cache.js';
import type { App } from '../../shared/domain/types.js';
import { AppError, coerceError } from '../../shared/errors.js';
import { retryWhileTransient } from '../../shared/backoff.js';
import { type RecordAttempt } from '../../shared/storage/ledger/attempts.js';
import type { DispatchState } from '../../shared/storage/ledger/dispatches.js';
import type { DueEntry } from '../../shared/storage/timers/due.js';
import type { Runtime } from '../../shared/runtime.js';
import type { AttemptResult, WebhookClient } from '../../shared/webhooks/client.js';
import { policyFor, type GuardConfig } from '../../shared/webhooks/guard.js';
import { webhookHeaders } from '../../shared/webhooks/signer.js';
import { EndpointHealth } from './health.js';
import { planSettle } from './settle.js';
import type { DispatcherMetrics } from './metrics.js';
import type { PrincipalOrder } from './ordering.js';
import { inAttemptSpan } from './tracing.js';
import type { FirstAttemptWriter, FirstWriteResult, WriteMode } from './writer.js';

export interface AttemptJob {
  state: DispatchState;
  trigger: 'first' | 'retry' | 'manual';
  /**
   * When the dispatch's safety-net entry fires, or this copy's lease of its due-index shard
   * ends: an attempt that cannot end before it is left to the due-index.
   */
  deadlineMs: number;
  /** Called once the job is over (attempted and recorded, or left), however it ended. */
  done?: () => void;
  /**
   * A first attempt straight from the event stream: the dispatch is not in the ledger yet and
   * is written with the attempt. `done` settles the Kafka message (rejected: it is not
   * committed, and is handled again).
   */
  fresh?: {
    /** How to write it (decided at write time: the partition may have moved meanwhile). */
    mode: () => WriteMode;
    done: (r: FirstWriteResult) => void;
    fail: (err: unknown) => void;
  };
}

/** First attempts being recorded after their endpoint slot was given back, at most. */
const MAX_WRITING = 2_000;

/** Room kept between an attempt's timeout and the safety net, for signing and the ledger write. */
export const DEADLINE_MARGIN_MS = 2_000;

/**
 * Makes one attempt of a dispatch and writes it to the ledger: reads the app (URL, settings)
 * and its current secret at send time, signs, POSTs, decides the next step, records, and
 * updates endpoint health. Never throws: a failure to record leaves the due entry in place,
 * so the attempt is made again.
 */
export class Attempter {
  readonly health: EndpointHealth;

  constructor(
    private readonly rt: Runtime,
    private readonly o: {
      client: WebhookClient;
      writer: FirstAttemptWriter;
      guard: GuardConfig;
      metrics: DispatcherMetrics;
      signal: AbortSignal;
      /** Called with an automatic retry's due entry once recorded (for a precise local timer). */
      onScheduled: (e: DueEntry) => void;
      /** Per-principal order, for apps that ask for it (ordering.ts). */
      order: PrincipalOrder;
      random?: () => number;
    },
  ) {
    this.health = new EndpointHealth(rt, o.metrics);
  }

  /**
   * The current secret, through the credential cache (refreshed ahead, so an attempt does not
   * wait for DynamoDB): a rotation made in this process is seen by the next attempt, one made
   * elsewhere within two CREDENTIAL_CACHE_TTL_MS (1 s by default). Concurrent attempts for one
   * app share one read.
   */
  private secretOf(app: App): Promise<string> {
    return cached(this.rt, `secret:${app.appId}`, () => getAppSecretKey(this.rt, app), {
      refreshAhead: true,
    });
  }

  /** Records of attempts whose request is over, still being written (see `run`). */
  private readonly writing = new Set<Promise<void>>();

  /** Resolves when every record being written is written (or failed). */
  async settled(): Promise<void> {
    while (this.writing.size > 0) await Promise.allSettled([...this.writing]);
  }

  /**
   * Makes the attempt. A first attempt from the event stream gives its endpoint slot back as
   * soon as the request is over and is recorded behind it (group commit), unless too many
   * records are being written already: then it holds the slot until its own is written.
   */
  async run(job: AttemptJob): Promise<void> {
    const { rt } = this;
    const timeoutMs = rt.config.WEBHOOK_TIMEOUT_MS;
    if (Date.now() + timeoutMs + DEADLINE_MARGIN_MS > job.deadlineMs) {
      this.o.metrics.deferred.inc({ reason: 'deadline' });
      return;
    }
    const s = job.state;
    let recorded: Promise<void>;
    try {
      const app = await getAppCached(rt, s.appId, { refreshAhead: true });
      let result: AttemptResult;
      if (!app) result = skipped('app_missing');
      // An operator's resend still goes out to a disabled endpoint: its success re-enables it.
      else if (job.trigger !== 'manual' && (await this.health.disabled(app)))
        result = skipped('endpoint_disabled');
      else result = await this.send(app, s);
      // Shutdown cut it short: not an outcome of the endpoint; the due entry (or the
      // uncommitted event) redoes it.
      if (result.aborted) {
        job.fresh?.fail(new AppError('SVC_UNAVAILABLE', 'attempt aborted by shutdown'));
        return;
      }
      recorded = this.settle(job, app, result).then(
        (written) => job.fresh?.done(written),
        (err: unknown) => this.notRecorded(job, err),
      );
    } catch (err) {
      this.notRecorded(job, err);
      return;
    }
    if (!job.fresh || this.writing.size >= MAX_WRITING) return recorded;
    this.writing.add(recorded);
    void recorded.finally(() => this.writing.delete(recorded));
  }

  private notRecorded(job: AttemptJob, err: unknown): void {
    this.rt.log.error(
      { err, dispatchId: job.state.dispatchId, code: coerceError(err).code },
      'webhook attempt not recorded; it will be redone',
    );
    this.o.metrics.ledger.inc({ result: 'failed' });
    job.fresh?.fail(err);
  }

  /** Signs with the current secret and POSTs, inside a span continuing the event's trace. */
  private async send(app: App, s: DispatchState): Promise<AttemptResult> {
    const n = s.attempts + 1;
    const secretKey = await this.secretOf(app);
    const attributes = {
      'svc.dispatch_id': s.dispatchId,
      'svc.event': s.event,
      'svc.attempt': n,
      'http.request.method': 'POST',
    };
    return inAttemptSpan(s.traceparent, attributes, async (span) => {
      const r = await this.o.client.post({
        url: app.webhookUrl,
        headers: webhookHeaders({
          dispatchId: s.dispatchId,
          eventType: s.event,
          attempt: n,
          timestampS: Math.floor(Date.now() / 1000),
          body: s.body,
          secretKey,
        }),
        body: s.body,
        policy: policyFor(app.environment, this.o.guard),
        timeoutMs: this.rt.config.WEBHOOK_TIMEOUT_MS,
        signal: this.o.signal,
      });
      if (r.statusCode) span.setAttribute('http.response.status_code', r.statusCode);
      if (r.errorClass) span.setAttribute('error.type', r.errorClass);
      return r;
    });
  }

  private writeFirst(
    record: RecordAttempt,
    mode: WriteMode,
    nowMs: number,
  ): Promise<FirstWriteResult> {
    const state = record.state as DispatchState;
    return this.o.writer.write(
      this.rt.ledger.firstAttemptRecord({ ...record, state, nowMs }),
      mode,
    );
  }

  /** Records an attempt as `planSettle` decides, then counts it and moves endpoint health. */
  private async settle(
    job: AttemptJob,
    app: App | undefined,
    result: AttemptResult,
  ): Promise<FirstWriteResult> {
    const { rt } = this;
    const s = job.state;
    const plan = planSettle(job, app, result, {
      shards: rt.config.TIMER_SHARDS,
      random: this.o.random ?? Math.random,
    });
    // An ordered dispatch that stays pending heads its principal's lane (or waits in it)
    // before its record lands, so no later event of the principal goes while it is retried.
    const ordered = app?.webhookOrdering === 'principal' && job.trigger !== 'manual';
    const pending = plan.record.deliveryStatus === 'pending';
    if (ordered && pending) await this.o.order.place(s);
    const written = job.fresh
      ? await this.writeFirst(plan.record, job.fresh.mode(), plan.endMs)
      : // The attempt was made: its record is not given up on while the store is only slow
        // (given up, the safety net would make the attempt again).
        (
          await retryWhileTransient(() => rt.ledger.recordAttempt(plan.record), {
            signal: this.o.signal,
            onRetry: (err, tries) => {
              if (tries % 5 === 0)
                rt.log.warn(
                  { err, tries, dispatchId: s.dispatchId },
                  'webhook attempt record failed; retrying until it lands',
                );
            },
          })
        ).result;
    const m = this.o.metrics;
    m.ledger.inc({ result: written });
    if (written === 'duplicate') return 'duplicate';
    m.deliveries.inc({ event: s.event, outcome: plan.outcome });
    if (plan.observeDuration)
      m.duration.observe({ outcome: plan.outcome }, result.durationMs / 1000);
    if (plan.endToEndS !== undefined) m.endToEnd.observe({ event: s.event }, plan.endToEndS);
    if (plan.next && written === 'recorded') {
      m.retries.inc({ event: s.event });
      this.o.onScheduled(plan.next);
    }
    // Settled: the principal's next held dispatch goes. A first attempt from the stream that
    // settled never took a lane. Lost here, the held one's recheck entry moves the lane on.
    if (ordered && !pending && !job.fresh)
      await this.o.order
        .release(s)
        .catch((err: unknown) =>
          rt.log.warn({ err, dispatchId: s.dispatchId }, 'principal lane not moved on'),
        );
    if (!app || !plan.health) return 'recorded';
    try {
      const at = new Date(plan.endMs);
      if (plan.health === 'success') await this.health.success(app, at);
      else await this.health.failure(app, at, plan.health === 'gone');
    } catch (err) {
      // The attempt is recorded; health catches up with the next outcome.
      rt.log.warn({ err, appId: app.appId }, 'endpoint health not updated');
    }
    return 'recorded';
  }
}

function skipped(errorClass: 'app_missing' | 'endpoint_disabled'): AttemptResult {
  return {
    ok: false,
    startedAtMs: Date.now(),
    durationMs: 0,
    errorClass,
    responseExcerpt: '',
    refused: true,
  };
}
