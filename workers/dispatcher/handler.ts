import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import type { Handler } from '../../shared/bus/consumer.js';
import { consentEventSchema } from '../../shared/domain/consent/events.js';
import { AppError } from '../../shared/errors.js';
import { newDispatchItems } from '../../shared/ledger/dispatches.js';
import { dueEntry, ensureFamily } from '../../shared/ledger/due.js';
import type { Runtime } from '../../shared/runtime.js';
import { isConditionFailure } from '../../shared/storage/dynamo.js';
import type { AttemptJob } from './attempt.js';
import type { Lanes } from './lanes.js';
import type { DispatcherMetrics } from './metrics.js';

/** The consumer name in the idempotency table. */
export const CONSUMER = 'dispatcher';

/**
 * consent-events → one dispatch per event and endpoint. The handler only makes the dispatch
 * durable (dispatch item, safety-net due entry and the consumer's idempotency claim in one
 * transaction) and hands the first attempt to the endpoint's lane without awaiting it: no
 * endpoint can hold up the partition. A redelivered event fails the transaction's conditions
 * and changes nothing.
 */
export function consentEventHandler(
  rt: Runtime,
  d: { lanes: Lanes<AttemptJob>; metrics: DispatcherMetrics },
): Handler {
  return async (raw, ctx) => {
    const parsed = consentEventSchema.safeParse(raw);
    if (!parsed.success)
      throw new AppError(
        'SVC_VALIDATION_FAILED',
        `not a consent event: ${parsed.error.issues[0]?.message ?? ''}`,
      );
    const event = parsed.data;
    const roomy = await d.lanes.waitForRoom();
    const nowMs = Date.now();
    // The first SLA check is written with the dispatch: its shard watermarks must exist first.
    if (event.data.postback) await ensureFamily(rt, 'sla', rt.config.TIMER_SHARDS, nowMs);
    const deadlineMs = nowMs + rt.config.DISPATCH_SAFETY_NET_MS;
    const created = newDispatchItems(rt, {
      event,
      // The wire body is the event exactly as published (parsing with zod would reorder keys).
      body: JSON.stringify(raw),
      endpoint: `${event.appId}:webhook`,
      nowMs,
      due: (id) =>
        dueEntry(id, event.appId, deadlineMs, 'attempt', rt.config.DISPATCH_TIMER_SHARDS),
      traceparent: ctx.headers.traceparent,
    });
    try {
      await rt.dynamo.doc.send(
        new TransactWriteCommand({
          TransactItems: [rt.processed.claimItem(CONSUMER, event.id, nowMs), ...created.items],
        }),
      );
    } catch (err) {
      if (!isConditionFailure(err)) throw err;
      d.metrics.dispatches.inc({ result: 'duplicate' });
      ctx.log.debug({ eventId: event.id }, 'event already dispatched');
      return;
    }
    d.metrics.dispatches.inc({ result: 'created' });
    const job: AttemptJob = { state: created.state, trigger: 'first', deadlineMs };
    if (!roomy) d.metrics.deferred.inc({ reason: 'backlog' });
    else if (!d.lanes.enqueue(event.appId, 'first', job))
      d.metrics.deferred.inc({ reason: 'endpoint_backlog' });
  };
}
