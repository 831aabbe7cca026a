import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import type { PipelineHandler, PipelineMessage } from '../../shared/bus/pipeline.js';
import { consentEventSchema, type ConsentEvent } from '../../shared/domain/consent/events.js';
import { AppError } from '../../shared/errors.js';
import {
  dispatchIdFor,
  existingDispatches,
  newDispatchItems,
  newDispatchState,
} from '../../shared/ledger/dispatches.js';
import { dueEntry, ensureFamily } from '../../shared/ledger/due.js';
import type { Runtime } from '../../shared/runtime.js';
import { isConditionFailure } from '../../shared/storage/dynamo.js';
import type { AttemptJob } from './attempt.js';
import type { Lanes } from './lanes.js';
import type { DispatcherMetrics } from './metrics.js';
import type { FirstWriteResult, WriteMode } from './writer.js';

/** Recorded dispatch ids remembered per process (a few MB). */
const RECENT = 50_000;

/** The consumer group's name. */
export const CONSUMER = 'dispatcher';

const endpointOf = (e: ConsentEvent) => `${e.appId}:webhook`;

/**
 * consent-events → one dispatch per event and endpoint. Nothing is written before the first
 * attempt: the event is handed straight to its endpoint's lane, and the dispatch reaches the
 * ledger together with that attempt's record. Until then the event stays uncommitted in
 * Kafka, so an attempt cut short by a crash is made again by whoever consumes it next (the
 * same dispatch id, so the same `webhook-id`).
 *
 * Events that a previous owner of the partition may have handled (`uncertain`) are first
 * looked up in the ledger (one batched read) and skipped when their dispatch exists; their
 * records are then written conditionally. When the endpoint's backlog is full the dispatch is
 * written at once with a due entry and its first attempt left to the sweeper.
 */
export function consentEventHandler(
  rt: Runtime,
  d: { lanes: Lanes<AttemptJob>; metrics: DispatcherMetrics },
): PipelineHandler {
  /** Dispatches of this process not yet recorded: a re-fetched event joins the running work. */
  const running = new Map<string, Promise<unknown>>();
  /** Dispatches this process recorded lately: a republished event (the outbox may publish twice) is not sent again. */
  const recent = new Set<string>();
  const remember = (id: string) => {
    recent.add(id);
    if (recent.size > RECENT) recent.delete(recent.values().next().value!);
  };

  return async (messages, ctx) => {
    const parsed = messages.map((m) => {
      const r = consentEventSchema.safeParse(m.value);
      return r.success ? { m, event: r.data, id: dispatchIdFor(r.data.id, endpointOf(r.data)) } : r;
    });
    const doubtful = parsed.flatMap((p) => ('m' in p && p.m.uncertain ? [p.id] : []));
    const existing = doubtful.length > 0 ? await existingDispatches(rt, doubtful) : new Set();
    // The others are looked up too, but while their attempts run: an event recorded by another
    // worker long ago (a late duplicate) then writes nothing instead of overwriting the record.
    const rest = parsed.flatMap((p) => ('m' in p && !p.m.uncertain ? [p.id] : []));
    const probe = rest.length > 0 ? existingDispatches(rt, rest) : Promise.resolve(new Set());
    probe.catch(() => undefined);
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
      if (already) {
        d.metrics.dispatches.inc({ result: 'duplicate' });
        out.push(already);
        continue;
      }
      if (existing.has(p.id) || recent.has(p.id)) {
        d.metrics.dispatches.inc({ result: 'duplicate' });
        ctx.log.debug({ eventId: p.event.id }, 'event already dispatched');
        out.push(Promise.resolve());
        continue;
      }
      // Back-pressure: the chunk (and so its partition's fetching) waits while the backlog is full.
      const roomy = await d.lanes.waitForRoom();
      const { m, id } = p;
      const mode = async (): Promise<WriteMode | 'duplicate'> => {
        if (m.uncertain) return 'safe'; // looked up above; written conditionally
        let seen: Set<unknown>;
        try {
          seen = await probe;
        } catch {
          return 'safe';
        }
        if (seen.has(id)) return 'duplicate';
        return ctx.held(m) ? 'fast' : 'safe';
      };
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

  async function dispatch(
    m: PipelineMessage,
    event: ConsentEvent,
    roomy: boolean,
    mode: () => Promise<WriteMode | 'duplicate'>,
  ): Promise<void> {
    const nowMs = Date.now();
    // SLA checks are written with the dispatch: their shard watermarks must exist first.
    if (event.data.postback) await ensureFamily(rt, 'sla', rt.config.TIMER_SHARDS, nowMs);
    // The wire body is the event exactly as published (parsing with zod would reorder keys).
    const body = JSON.stringify(m.value);
    const traceparent = m.headers.traceparent;
    const state = newDispatchState({ event, body, endpoint: endpointOf(event), nowMs, traceparent });
    const settled = new Promise<FirstWriteResult>((resolve, reject) => {
      const job: AttemptJob = {
        state,
        trigger: 'first',
        deadlineMs: Number.POSITIVE_INFINITY,
        fresh: {
          mode,
          done: resolve,
          fail: reject,
        },
      };
      if (roomy && d.lanes.enqueue(event.appId, 'first', job)) return;
      d.metrics.deferred.inc({ reason: roomy ? 'endpoint_backlog' : 'backlog' });
      defer(event, body, nowMs, traceparent).then(resolve, reject);
    });
    const result = await settled;
    d.metrics.dispatches.inc({ result: result === 'recorded' ? 'created' : 'duplicate' });
  }

  /** The dispatch is written now, pending, with its first attempt due at once in the due-index. */
  async function defer(
    event: ConsentEvent,
    body: string,
    nowMs: number,
    traceparent: string | undefined,
  ): Promise<FirstWriteResult> {
    const created = newDispatchItems(rt, {
      event,
      body,
      endpoint: endpointOf(event),
      nowMs,
      due: (id) => dueEntry(id, event.appId, nowMs, 'attempt', rt.config.DISPATCH_TIMER_SHARDS),
      traceparent,
    });
    try {
      await rt.dynamo.doc.send(new TransactWriteCommand({ TransactItems: created.items }));
      return 'recorded';
    } catch (err) {
      if (isConditionFailure(err)) return 'duplicate';
      throw err;
    }
  }
}
