import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { AGREED_METRICS, ROOT, codeMetricNames, isKnownMetric, metricNamesIn } from './metrics.js';

interface Target {
  expr?: string;
  refId?: string;
  datasource?: { type?: string; uid?: string };
}
interface Panel {
  id: number;
  type: string;
  title: string;
  datasource?: { type?: string; uid?: string };
  targets?: Target[];
  gridPos: { x: number; y: number; w: number; h: number };
}

const DASHBOARD = path.join(ROOT, 'infra/grafana/svc-sla.json');
const dash = JSON.parse(fs.readFileSync(DASHBOARD, 'utf8')) as {
  uid: string;
  title: string;
  __inputs: { name: string; type: string; pluginId: string }[];
  panels: Panel[];
};
const panels = dash.panels.filter((p) => p.type !== 'row');
const exprs = panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr ?? ''));

describe('Grafana dashboard infra/grafana/svc-sla.json', () => {
  it('takes its Prometheus datasource as the ${DS_PROMETHEUS} input', () => {
    expect(dash.__inputs).toEqual([
      expect.objectContaining({
        name: 'DS_PROMETHEUS',
        type: 'datasource',
        pluginId: 'prometheus',
      }),
    ]);
    for (const p of panels) {
      expect(p.datasource, p.title).toEqual({ type: 'prometheus', uid: '${DS_PROMETHEUS}' });
      for (const t of p.targets ?? []) expect(t.datasource, p.title).toEqual(p.datasource);
    }
    // No datasource hard-wired anywhere else (an import would then point at the wrong one).
    const uids = [...fs.readFileSync(DASHBOARD, 'utf8').matchAll(/"uid":\s*"([^"]*)"/g)].map(
      (m) => m[1],
    );
    expect(new Set(uids)).toEqual(new Set(['${DS_PROMETHEUS}', dash.uid]));
  });

  it('gives every panel at least one PromQL query, with distinct refIds', () => {
    expect(panels.length).toBeGreaterThanOrEqual(10);
    for (const p of panels) {
      expect(p.targets?.length, p.title).toBeGreaterThan(0);
      for (const t of p.targets!) expect(t.expr?.trim(), p.title).toMatch(/\bsvc_[a-z0-9_]+/);
      const refIds = p.targets!.map((t) => t.refId);
      expect(new Set(refIds).size, p.title).toBe(refIds.length);
    }
    expect(new Set(dash.panels.map((p) => p.id)).size).toBe(dash.panels.length);
  });

  it('reads only metrics that are agreed or exported by the code', () => {
    const known = new Set([...AGREED_METRICS, ...codeMetricNames()]);
    // The grep must find the metrics the code is known to define, or it proves nothing.
    expect(codeMetricNames()).toContain('svc_outbox_backlog');
    const unknown = exprs.flatMap(metricNamesIn).filter((n) => !isKnownMetric(n, known));
    expect(unknown).toEqual([]);
  });

  it('covers the SLA view: compliance, awaiting and age, breaches, delivery, latency, lag, outbox', () => {
    const used = new Set(exprs.flatMap(metricNamesIn));
    for (const name of [
      'svc_compliance_flag_transitions_total',
      'svc_dispatches_awaiting_postback',
      'svc_dispatches_awaiting_postback_near_deadline',
      'svc_sla_breaches_total',
      'svc_unconfirmed_erasures',
      'svc_webhook_deliveries_total',
      'svc_webhook_delivery_duration_seconds_bucket',
      'svc_consumer_lag',
      'svc_outbox_backlog',
    ])
      expect(used, name).toContain(name);
    expect([...used].some((n) => n.startsWith('svc_webhook_end_to_end'))).toBe(true);
  });

  it('lays panels out on the 24-column grid without overlaps', () => {
    const cells = new Set<string>();
    for (const p of dash.panels) {
      const g = p.gridPos;
      expect(g.x + g.w, p.title).toBeLessThanOrEqual(24);
      for (let x = g.x; x < g.x + g.w; x++)
        for (let y = g.y; y < g.y + g.h; y++) {
          expect(cells.has(`${x},${y}`), `${p.title} overlaps at ${x},${y}`).toBe(false);
          cells.add(`${x},${y}`);
        }
    }
  });
});
