import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { FLAGS, POSTBACK_STATUSES } from '../../shared/domain/compliance/flags.js';
import { POSTBACK_EVENTS } from '../../shared/storage/ledger/flag-entries.js';
import { getOrCreate } from '../../shared/metrics.js';

/**
 * Compliance metrics (docs/operations.md, Observability). The names are fixed:
 * infra/prometheus/alerts.yml and the Grafana SLA dashboard query them. Bounded labels only, never
 * ids.
 */
export function complianceMetrics(registry: Registry) {
  const counter = (name: string, help: string, labelNames: string[]) =>
    getOrCreate(
      registry,
      name,
      () => new Counter({ name, help, labelNames, registers: [registry] }),
    );
  const gauge = (name: string, help: string, labelNames: string[]) =>
    getOrCreate(registry, name, () => new Gauge({ name, help, labelNames, registers: [registry] }));
  const m = {
    transitions: counter(
      'svc_compliance_flag_transitions_total',
      'Changes of a dispatch’s compliance flag, by the flag entered',
      ['flag'],
    ),
    breaches: counter(
      'svc_sla_breaches_total',
      'Dispatches that entered flag breach (SLA passed, or risk high), by event',
      ['event'],
    ),
    postbacks: counter(
      'svc_postbacks_total',
      'Postbacks recorded in the ledger, by status and the dispatch’s flag after it',
      ['status', 'flag'],
    ),
    timeToPostback: getOrCreate(
      registry,
      'svc_time_to_postback_seconds',
      () =>
        new Histogram({
          name: 'svc_time_to_postback_seconds',
          help: 'Event created → first postback received, by event',
          labelNames: ['event'],
          buckets: [1, 10, 60, 300, 900, 1800, 3600, 7200, 21600, 86400, 259200, 604800, 2592000],
          registers: [registry],
        }),
    ),
    awaiting: gauge(
      'svc_dispatches_awaiting_postback',
      'Dispatches whose required postback has not arrived, by event (one reporting copy)',
      ['event'],
    ),
    nearDeadline: gauge(
      'svc_dispatches_awaiting_postback_near_deadline',
      'Dispatches awaiting a postback within the last 20 % of their window, by event',
      ['event'],
    ),
    unconfirmedErasures: gauge(
      'svc_unconfirmed_erasures',
      'data.deleted dispatches flagged unconfirmed_erasure (30 days without confirmation)',
      [],
    ),
  };
  // Every label value starts at 0, so increase() sees the first breach or transition.
  for (const flag of FLAGS) m.transitions.inc({ flag }, 0);
  for (const event of POSTBACK_EVENTS) m.breaches.inc({ event }, 0);
  for (const status of POSTBACK_STATUSES)
    for (const flag of FLAGS) m.postbacks.inc({ status, flag }, 0);
  return m;
}

export type ComplianceMetrics = ReturnType<typeof complianceMetrics>;
