import type { PipelineHandler, PipelineMessage } from '../../shared/bus/pipeline.js';
import { getAppCached } from '../../shared/domain/apps.js';
import { consentEventSchema, type ConsentEvent } from '../../shared/domain/consent/events.js';
import { AppError } from '../../shared/errors.js';
import {
  dispatchIdFor,
  webhookEndpoint,
  newDispatchState,
  type DispatchState,
} from '../../shared/storage/ledger/dispatches.js';
import { retainUntilFor } from '../../shared/domain/ledger/retention.js';
import { dueEntry, ensureFamily } from '../../shared/storage/timers/due.js';
import type { Runtime } from '../../shared/runtime.js';
import type { AttemptJob } from './attempt.js';
import { FRESH_MS, actionFor, isDoubtful, writeModeFor } from './classify.js';
import type { Lanes } from './lanes.js';
import type { DispatcherMetrics } from './metrics.js';
import { HOLD_RECHECK_MS, type PrincipalOrder } from './ordering.js';
import type { FirstWriteResult, WriteMode } from './writer.js';

/** `recent` keeps what this process recorded for twice the window in which it answers. */
const RECENT_MS = 2 * FRESH_MS;
const RECENT_MAX = 500_000;

/** The consumer group's name. */
export const CONSUMER = 'dispatcher';

const endpointOf = (e: ConsentEvent) => webhookEndpoint(e.appId);

/** What a principal's lane (ordering.ts) knows of an event's dispatch. */
const laneTargetOf = (e: ConsentEvent) => ({
  appId: e.appId,
  referenceId: e.data.referenceId,
  dispatchId: dispatchIdFor(e.id, endpointOf(e)),
});

/**
 * consent-events → one dispatch per event and endpoint. Nothing is written before the first
 * attempt: the event is handed straight to its endpoint's lane, and the dispatch reaches the
 * ledger together with that attempt's record. Until then the event stays uncommitted in
 * Kafka, so an attempt cut short by a crash is made again by whoever consumes it next (the
 * same dispatch id, so the same `webhook-id`).
 *
 * Events someone else may have recorded are looked up first (see the handler body). When the
 * endpoint's backlog is full the dispatch is written at once with a due entry and its first
 * attempt left to the sweeper. Events that need a postback are written before their first
 * attempt (see `durableFirst`).
 */
export function consentEventHandler(
  rt: Runtime,
  d: { lanes: Lanes<AttemptJob>; metrics: DispatcherMetrics; order: PrincipalOrder },
): PipelineHandler {
  /** Dispatches of this process not yet recorded: a re-fetched event joins the running work. */
  const running = new Map<string, Promise<unknown>>();
  /** Dispatches this process recorded in the last RECENT_MS (id → when), oldest first. */
  const recent = new Map<string, number>();
  const remember = (id: string) => {
    const now = Date.now();
    recent.delete(id);
    recent.set(id, now);
    for (const [old, at] of recent) {
      if (at > now - RECENT_MS && recent.size <= RECENT_MAX) break;
      recent.delete(old);
    }
  };

  return async (messages, ctx) => {
    const parsed = messages.map((m) => {
      const r = consentEventSchema.safeParse(m.value);
      return r.success ? { m, event: r.data, id: dispatchIdFor(r.data.id, endpointOf(r.data)) } : r;
    });
    // An event someone else may have recorded (`isDoubtful`) is looked up first, skipped if
    // recorded, and written conditionally. A fresh one can only have been recorded by this
    // process, lately: `recent` answers for it.
    const nowMs = Date.now();
    const doubtful = new Set(
      parsed.flatMap((p) =>
        'm' in p &&
        isDoubtful(
          {
            uncertain: p.m.uncertain,
            assignedAtMs: p.m.assignedAtMs,
            createdAtMs: Date.parse(p.event.createdAt),
          },
          nowMs,
          rt.config.DISPATCH_CLOCK_SKEW_MS,
        )
          ? [p.id]
          : [],
      ),
    );
    const existing = await rt.ledger.recordedDispatches([...doubtful]);
    // A writer that landed one late and died before stamping it (see `FirstAttemptWriter`):
    // it gets its change stamp now, before its event is committed.
    const unstamped = [...existing.values()].filter((x) => !x.stamped);
    d.metrics.ledgerLateStamps.inc(await rt.ledger.stampLate(unstamped, Date.now()));
    const out: Promise<unknown>[] = [];
    for (const p of parsed) {
      if (!('m' in p)) {
        const reason = p.error.issues[0]?.message ?? '';
        out.push(
          Promise.reject(new AppError('SVC_VALIDATION_FAILED', `not a consent event: ${reason}`)),
        );
        continue;
      }
      const already = running.get(p.id);
      const action = actionFor({
        running: already !== undefined,
        recorded: existing.has(p.id) || recent.has(p.id),
      });
      if (action !== 'dispatch') {
        d.metrics.dispatches.inc({ result: 'duplicate' });
        if (action === 'skip') ctx.log.debug({ eventId: p.event.id }, 'event already dispatched');
        out.push(already ?? Promise.resolve());
        continue;
      }
      // Back-pressure: the chunk (and so its partition's fetching) waits while the backlog is full.
      const roomy = await d.lanes.waitForRoom();
      const { m, id } = p;
      const mode = (): WriteMode => writeModeFor(doubtful.has(id), ctx.held(m));
      const work = dispatch(m, p.event, roomy, mode);
      running.set(id, work);
      void work.then(
        () => {
          running.delete(id);
          remember(id);
        },
        () => running.delete(id),
      );
      out.push(work);
    }
    return out;
  };

  /**
   * An app ordered by principal (`webhookOrdering`, ordering.ts) takes a principal's events in
   * turn: one whose principal has a pending dispatch in its lane is written held behind it.
   */
  async function dispatch(
    m: PipelineMessage,
    event: ConsentEvent,
    roomy: boolean,
    mode: () => WriteMode,
  ): Promise<void> {
    const app = await getAppCached(rt, event.appId, { refreshAhead: true });
    if (app?.webhookOrdering !== 'principal') return deliver(m, event, roomy, mode, false);
    const target = laneTargetOf(event);
    return d.order.inTurn(target.appId, target.referenceId, async () => {
      const lane = await d.order.current(target.appId, target.referenceId);
      if (!lane || lane.head === target.dispatchId) return deliver(m, event, roomy, mode, true);
      // Written first, then queued: a held dispatch always exists, and its recheck entry
      // finds its place again if the queueing is lost.
      const nowMs = Date.now();
      const body = JSON.stringify(m.value);
      const { result } = await write(
        event,
        body,
        nowMs,
        m.headers.traceparent,
        nowMs + HOLD_RECHECK_MS,
      );
      if ((await d.order.place(target)) !== 'held') await d.order.wake(target.dispatchId);
      d.metrics.dispatches.inc({ result: result === 'recorded' ? 'created' : 'duplicate' });
    });
  }

  async function deliver(
    m: PipelineMessage,
    event: ConsentEvent,
    roomy: boolean,
    mode: () => WriteMode,
    ordered: boolean,
  ): Promise<void> {
    const nowMs = Date.now();
    // The wire body is the event exactly as published (parsing with zod would reorder keys).
    const body = JSON.stringify(m.value);
    const traceparent = m.headers.traceparent;
    const result = event.data.postback
      ? await durableFirst(event, body, nowMs, traceparent, roomy, ordered)
      : await new Promise<FirstWriteResult>((resolve, reject) => {
          const state = newDispatchState({
            event,
            body,
            endpoint: endpointOf(event),
            nowMs,
            traceparent,
          });
          const job: AttemptJob = {
            state,
            trigger: 'first',
            deadlineMs: Number.POSITIVE_INFINITY,
            fresh: { mode, done: resolve, fail: reject },
          };
          if (roomy && d.lanes.enqueue(event.appId, 'first', job)) return;
          d.metrics.deferred.inc({ reason: roomy ? 'endpoint_backlog' : 'backlog' });
          deferredDueAt(state, nowMs, ordered)
            .then(async (dueAtMs) => {
              const { result } = await write(event, body, nowMs, traceparent, dueAtMs);
              if (dueAtMs !== nowMs) await d.order.written(state);
              return result;
            })
            .then(resolve, reject);
        });
    d.metrics.dispatches.inc({ result: result === 'recorded' ? 'created' : 'duplicate' });
  }

  /**
   * When a dispatch written before its first attempt is due. Its event is committed before the
   * attempt, so when ordered it takes its lane first: a crash before the attempt must not let
   * the principal's next event overtake it. Held (the lane was taken meanwhile), it waits;
   * once it is written, `order.written` catches a release that came before its record.
   */
  async function deferredDueAt(
    s: Pick<DispatchState, 'appId' | 'referenceId' | 'dispatchId'>,
    dueAtMs: number,
    ordered: boolean,
  ): Promise<number> {
    if (!ordered || (await d.order.place(s)) !== 'held') return dueAtMs;
    return Date.now() + HOLD_RECHECK_MS;
  }

  /**
   * An event that needs a postback is in the ledger before its first attempt: the app may post
   * back before it answers the webhook, and the postback API must find the dispatch. It is
   * written due again after the safety net, which redoes the attempt if this worker dies
   * during it.
   */
  async function durableFirst(
    event: ConsentEvent,
    body: string,
    nowMs: number,
    traceparent: string | undefined,
    roomy: boolean,
    ordered: boolean,
  ): Promise<FirstWriteResult> {
    // The first SLA check is written with the dispatch: its shard watermarks must exist first.
    await ensureFamily(rt, 'sla', rt.config.TIMER_SHARDS, nowMs);
    const deadlineMs = nowMs + rt.config.DISPATCH_SAFETY_NET_MS;
    const target = laneTargetOf(event);
    const dueAtMs = await deferredDueAt(target, deadlineMs, ordered);
    const { result, state } = await write(event, body, nowMs, traceparent, dueAtMs);
    if (dueAtMs !== deadlineMs) await d.order.written(target);
    if (result === 'duplicate' || dueAtMs !== deadlineMs) return result;
    const job: AttemptJob = { state, trigger: 'first', deadlineMs };
    if (!roomy) d.metrics.deferred.inc({ reason: 'backlog' });
    else if (!d.lanes.enqueue(event.appId, 'first', job))
      d.metrics.deferred.inc({ reason: 'endpoint_backlog' });
    return result;
  }

  /** Writes the dispatch now, pending, with its next attempt due at `dueAtMs` in the due-index. */
  async function write(
    event: ConsentEvent,
    body: string,
    nowMs: number,
    traceparent: string | undefined,
    dueAtMs: number,
  ) {
    // The app's retention, from the cache the attempts read the app through.
    const app = await getAppCached(rt, event.appId, { refreshAhead: true });
    return rt.ledger.createDispatch({
      event,
      body,
      endpoint: endpointOf(event),
      nowMs,
      due: (id) => dueEntry(id, event.appId, dueAtMs, 'attempt', rt.config.TIMER_SHARDS),
      traceparent,
      retainUntil: retainUntilFor(app, nowMs),
    });
  }
}
