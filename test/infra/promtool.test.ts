import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  AGREED_METRICS,
  ROOT,
  codeMetricNames,
  dashboardExprs,
  isKnownMetric,
  metricNamesIn,
} from './metrics.js';

/**
 * The alert rules, their unit tests and the scrape config, checked by the real `promtool`
 * (Debian package `prometheus`; .ci/run installs it when missing).
 */

const DIR = path.join(ROOT, 'infra/prometheus');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-promtool-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

function promtool(...args: string[]) {
  const r = spawnSync('promtool', args, { cwd: DIR, encoding: 'utf8', timeout: 60_000 });
  if (r.error)
    throw new Error(
      `promtool could not run (${r.error.message}); install it: apt-get install -y prometheus`,
    );
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

const rules = fs.readFileSync(path.join(DIR, 'alerts.yml'), 'utf8');
const alertNames = [...rules.matchAll(/^\s*- alert:\s*(\S+)/gm)].map((m) => m[1]!);

describe('Prometheus alert rules (infra/prometheus)', () => {
  it('pass `promtool check rules`', () => {
    const r = promtool('check', 'rules', 'alerts.yml');
    expect(r.code, r.out).toBe(0);
    expect(r.out).toContain(`SUCCESS: ${alertNames.length} rules found`);
  });

  it('pass their unit tests with `promtool test rules`', () => {
    const r = promtool('test', 'rules', 'alerts.test.yml');
    expect(r.code, r.out).toBe(0);
    expect(r.out).toMatch(/alerts\.test\.yml\s+SUCCESS/);
  });

  it('a broken expectation makes `promtool test rules` fail (the check can fail)', () => {
    const broken = fs
      .readFileSync(path.join(DIR, 'alerts.test.yml'), 'utf8')
      .replace("description: 'Some data.deleted dispatches", "description: 'Some other dispatches")
      .replace('  - alerts.yml', `  - ${path.join(DIR, 'alerts.yml')}`);
    const file = path.join(tmp, 'broken.test.yml');
    fs.writeFileSync(file, broken);
    const r = promtool('test', 'rules', file);
    expect(r.code).not.toBe(0);
    expect(r.out).toContain('FAILED');
  });

  it('include the agreed alerts, each tested both firing and silent', () => {
    expect(alertNames).toEqual(
      expect.arrayContaining([
        'SvcSlaBreachRateHigh',
        'SvcUnconfirmedErasure',
        'SvcPostbacksNearDeadline',
        'SvcWebhookDeliveryFailureRate',
        'SvcConsumerLagHigh',
        'SvcOutboxBacklogHigh',
      ]),
    );
    const cases = fs
      .readFileSync(path.join(DIR, 'alerts.test.yml'), 'utf8')
      .split(/- eval_time:/)
      .slice(1)
      .map((block) => ({
        alert: /alertname:\s*(\S+)/.exec(block)?.[1],
        silent: /exp_alerts:\s*\[\]/.test(block),
      }));
    for (const name of alertNames) {
      const mine = cases.filter((c) => c.alert === name);
      expect(
        mine.some((c) => c.silent),
        `${name} has a silent case`,
      ).toBe(true);
      expect(
        mine.some((c) => !c.silent),
        `${name} has a firing case`,
      ).toBe(true);
    }
  });

  it('query only agreed metrics or metrics the code exports', () => {
    const known = new Set([...AGREED_METRICS, ...codeMetricNames()]);
    const unknown = metricNamesIn(rules).filter((n) => !isKnownMetric(n, known));
    expect(unknown).toEqual([]);
  });

  it('ship a valid scrape config for the embedded default', () => {
    const r = promtool('check', 'config', 'prometheus.yml');
    expect(r.code, r.out).toBe(0);
    expect(r.out).toContain('SUCCESS: prometheus.yml is valid');
    const config = fs.readFileSync(path.join(DIR, 'prometheus.yml'), 'utf8');
    expect(config).toMatch(/metrics_path:\s*\/metrics/);
    expect(config).toMatch(/targets:\s*\[\s*'localhost:8080'\s*\]/);
  });
});

describe('Grafana dashboard queries', () => {
  it('are valid PromQL (parsed by promtool as recording rules)', () => {
    const exprs = dashboardExprs();
    expect(exprs.length).toBeGreaterThan(0);
    // Grafana fills $__rate_interval in; any range does for parsing.
    const body = exprs
      .map(
        (e, i) =>
          `      - record: dashboard:query_${i}\n        expr: ${JSON.stringify(e.replaceAll('$__rate_interval', '5m'))}`,
      )
      .join('\n');
    const file = path.join(tmp, 'dashboard-rules.yml');
    fs.writeFileSync(file, `groups:\n  - name: dashboard\n    rules:\n${body}\n`);
    const r = promtool('check', 'rules', file);
    expect(r.code, r.out).toBe(0);
    expect(r.out).toContain(`SUCCESS: ${exprs.length} rules found`);
  });
});
