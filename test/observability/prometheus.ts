import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

/**
 * A real Prometheus server (Debian package `prometheus`; .ci/run installs it when missing) on a
 * free loopback port, scraping given targets every second and evaluating given rule files
 * every second, with its TSDB in a temp dir. `stop()` kills it and removes the dir.
 */

export interface PromResult {
  status: 'success' | 'error';
  error?: string;
  data: { resultType: string; result: { metric: Record<string, string>; value: unknown }[] };
}

async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const port = (srv.address() as net.AddressInfo).port;
  await new Promise((r) => srv.close(r));
  return port;
}

export async function startPrometheus(o: { targets: string[]; ruleFiles: string[] }) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-prometheus-'));
  const port = await freePort();
  const config = [
    'global:',
    '  scrape_interval: 1s',
    '  scrape_timeout: 1s',
    '  evaluation_interval: 1s',
    'rule_files:',
    ...o.ruleFiles.map((f) => `  - ${JSON.stringify(f)}`),
    'scrape_configs:',
    '  - job_name: svc',
    '    metrics_path: /metrics',
    '    static_configs:',
    `      - targets: ${JSON.stringify(o.targets)}`,
  ].join('\n');
  fs.writeFileSync(path.join(dir, 'prometheus.yml'), `${config}\n`);
  let output = '';
  const child: ChildProcess = spawn(
    'prometheus',
    [
      `--config.file=${path.join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${path.join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  // Kept (the tail) for the failure message when Prometheus does not come up.
  const keep = (c: Buffer) => (output = `${output}${c.toString()}`.slice(-4000));
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let spawnError: Error | undefined;
  child.once('error', (err) => (spawnError = err));
  // A crashed test worker must not leave Prometheus behind.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);

  const base = `http://127.0.0.1:${port}`;
  return {
    base,
    dir,
    child,
    /** Why it is not up: spawn error, exit, or its own log. */
    diagnose: () =>
      spawnError
        ? `prometheus could not run (${spawnError.message}); install it: apt-get install -y prometheus`
        : `prometheus exit=${child.exitCode} signal=${child.signalCode}\n${output}`,
    async api<T = PromResult>(p: string): Promise<T> {
      const r = await fetch(`${base}${p}`);
      return (await r.json()) as T;
    },
    query(expr: string): Promise<PromResult> {
      return this.api(`/api/v1/query?query=${encodeURIComponent(expr)}`);
    },
    async stop() {
      process.off('exit', killOnExit);
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
        await exited;
        clearTimeout(timer);
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

export type Prometheus = Awaited<ReturnType<typeof startPrometheus>>;

/**
 * A dashboard query as Grafana would send it: its interval variables replaced by concrete
 * durations fitting a 1 s scrape (Grafana's $__rate_interval is at least 4 scrape intervals).
 */
export function concreteQuery(expr: string): string {
  return expr
    .replaceAll('$__rate_interval', '1m')
    .replaceAll('${__rate_interval}', '1m')
    .replaceAll('$__interval_ms', '15000')
    .replaceAll('$__interval', '15s')
    .replaceAll('${__interval}', '15s')
    .replaceAll('$__range_s', '3600')
    .replaceAll('$__range_ms', '3600000')
    .replaceAll('$__range', '1h')
    .replaceAll('${__range}', '1h');
}
