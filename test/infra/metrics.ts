import fs from 'node:fs';
import path from 'node:path';

/** Metric names shared by the infra tests: what the dashboards and alerts may query. */

export const ROOT = path.resolve(import.meta.dirname, '../..');

/** Names agreed for the workers to export (issue 5), whether or not the code has them yet. */
export const AGREED_METRICS = [
  'svc_webhook_deliveries_total',
  'svc_dispatches_awaiting_postback',
  'svc_dispatches_awaiting_postback_near_deadline',
  'svc_compliance_flag_transitions_total',
  'svc_sla_breaches_total',
  'svc_unconfirmed_erasures',
  'svc_consumer_lag',
  'svc_outbox_backlog',
  'svc_webhook_delivery_duration_seconds',
  'svc_webhook_end_to_end_seconds',
];

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : sources(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') ? [p] : [];
  });
}

/** Every `'svc_…'` string literal in the production code: the metric names it can export. */
export function codeMetricNames(): Set<string> {
  const names = new Set<string>();
  for (const dir of ['shared', 'services', 'workers'])
    for (const file of sources(path.join(ROOT, dir)))
      for (const m of fs.readFileSync(file, 'utf8').matchAll(/['"`](svc_[a-z0-9_]+)['"`]/g))
        names.add(m[1]!);
  return names;
}

const SERIES_SUFFIX = /_(bucket|sum|count)$/;

/** The metric names a PromQL expression reads (a histogram's series map to its name). */
export function metricNamesIn(expr: string): string[] {
  return [...new Set([...expr.matchAll(/\bsvc_[a-z0-9_]+/g)].map((m) => m[0]))];
}

/** True when `name` is agreed or exported by the code (histogram series included). */
export function isKnownMetric(name: string, known: Set<string>): boolean {
  return known.has(name) || known.has(name.replace(SERIES_SUFFIX, ''));
}

/** Every PromQL query of the SLA dashboard. */
export function dashboardExprs(): string[] {
  const dash = JSON.parse(
    fs.readFileSync(path.join(ROOT, 'infra/grafana/svc-sla.json'), 'utf8'),
  ) as { panels: { targets?: { expr?: string }[] }[] };
  return dash.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr ?? ''));
}
