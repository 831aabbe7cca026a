import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { getOrCreate } from '../../shared/metrics.js';

/** Dispatcher metrics (docs/operations.md, Observability): bounded labels only, never ids. */
export function dispatcherMetrics(registry: Registry) {
  const counter = (name: string, help: string, labelNames: string[]) =>
    getOrCreate(
      registry,
      name,
      () => new Counter({ name, help, labelNames, registers: [registry] }),
    );
  const histogram = (name: string, help: string, labelNames: string[], buckets: number[]) =>
    getOrCreate(
      registry,
      name,
      () => new Histogram({ name, help, labelNames, buckets, registers: [registry] }),
    );
  const gauge = (name: string, help: string, labelNames: string[]) =>
    getOrCreate(registry, name, () => new Gauge({ name, help, labelNames, registers: [registry] }));
  return {
    deliveries: counter(
      'svc_webhook_deliveries_total',
      'Webhook attempts by event and outcome (delivered, or the error class)',
      ['event', 'outcome'],
    ),
    duration: histogram(
      'svc_webhook_delivery_duration_seconds',
      'Duration of one webhook attempt, by outcome',
      ['outcome'],
      [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    ),
    endToEnd: histogram(
      'svc_webhook_end_to_end_latency_seconds',
      'Event created → first 2xx received, by event',
      ['event'],
      [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5, 30, 300, 3600, 86400],
    ),
    retries: counter(
      'svc_webhook_retries_scheduled_total',
      'Automatic retries scheduled, by event',
      ['event'],
    ),
    inFlight: gauge(
      'svc_webhook_in_flight',
      'Webhook attempts running now, by lane (first, retry)',
      ['lane'],
    ),
    backlog: gauge('svc_webhook_backlog', 'Webhook attempts queued in memory, by lane', ['lane']),
    disabled: counter(
      'svc_webhook_endpoints_disabled_total',
      'Endpoints disabled, by reason (gone, failing)',
      ['reason'],
    ),
    ordering: counter(
      'svc_webhook_ordering_total',
      "Apps ordered by principal: dispatches held behind a principal's retried one, released when it settled, or sent unordered because the lane was full",
      ['step'],
    ),
    dispatches: counter(
      'svc_webhook_dispatches_total',
      'Events seen by the dispatcher, by result (created, duplicate)',
      ['result'],
    ),
    deferred: counter(
      'svc_webhook_attempts_deferred_total',
      'Attempts left to the durable due-index instead of running now, by reason',
      ['reason'],
    ),
    ledger: counter(
      'svc_webhook_ledger_writes_total',
      'Attempt records by result (recorded, recorded_requeued, duplicate, failed)',
      ['result'],
    ),
    ledgerBatch: histogram(
      'svc_webhook_ledger_batch_size',
      'First attempts written to the ledger per group commit',
      [],
      [1, 2, 5, 10, 15, 20, 25],
    ),
    ledgerPaged: counter(
      'svc_webhook_ledger_paged_total',
      'First attempts whose dispatch is listed by a carrier instead of a gsi1 entry (dispatch), and the carriers among them (carrier)',
      ['item'],
    ),
    ledgerLateStamps: counter(
      'svc_webhook_ledger_late_stamps_total',
      'Dispatch items written without a change-index stamp that landed close to their period being sealed, stamped afterwards',
      [],
    ),
  };
}

export type DispatcherMetrics = ReturnType<typeof dispatcherMetrics>;
