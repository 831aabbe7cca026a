import fs from 'node:fs';
import path from 'node:path';
import { check, learn, taint, type Finding, type FindingKind } from './oracle.js';
import { buildRequest, type FuzzRequest } from './request.js';
import type { Route } from './routes.js';
import { answered, createAgent, send, type Answer } from './send.js';
import type { World } from './world.js';

/**
 * The fuzz loop: builds request after request (each from its own seeded stream), sends them
 * `concurrency` at a time, checks every answer, probes /healthz as it goes (a crash ends the
 * run), replenishes the world's data now and then, and counts everything.
 */

export interface FuzzOptions {
  seed: number;
  requests: number;
  concurrency: number;
  /** Requests between two refills of the tenants' data (fuzzed erasures use it up). */
  replenishEvery: number;
  timeoutMs: number;
  /** Run only these request indexes (reproducing a failure). */
  only?: number[];
  log: (m: string) => void;
  /** Fixed requests sent first (test/fuzz/probes.ts). */
  probes?: FuzzRequest[];
  /** When set, one JSON line per request (what was sent, status, start of the answer) goes here. */
  traceFile?: string;
  /** Where failing requests are written in full (bodies included); none when unset. */
  outDir?: string;
}

export interface FailureRecord {
  kind: FindingKind;
  detail: string;
  index: number;
  route: string;
  request: FuzzRequest | undefined;
  status: number | undefined;
  answer: string | undefined;
  /** For a 503: what /readyz said right after. */
  readyz?: string;
}

export interface FuzzReport {
  seed: number;
  /** Requests sent: the generated ones and the probes. */
  sent: number;
  /** Generated requests asked for (what --requests repeats). */
  generated: number;
  byClass: Record<string, number>;
  byStatus: Record<string, number>;
  byRoute: Record<string, Record<string, number>>;
  byPlan: Record<string, number>;
  failures: FailureRecord[];
  crashed: boolean;
  ms: number;
  setupCalls: number;
  issues: string[];
}

const inc = (o: Record<string, number>, k: string) => (o[k] = (o[k] ?? 0) + 1);

async function probe(base: URL, p: string): Promise<{ ok: boolean; text: string }> {
  try {
    const r = await fetch(new URL(p, base), { signal: AbortSignal.timeout(10_000) });
    return { ok: r.ok, text: `${r.status} ${(await r.text()).slice(0, 200)}` };
  } catch (err) {
    return { ok: false, text: (err as Error).message };
  }
}

/** True while the process answers /healthz (three tries, so one slow moment is no crash). */
async function healthy(base: URL): Promise<boolean> {
  for (let i = 0; i < 3; i++) {
    if ((await probe(base, '/healthz')).ok) return true;
    await new Promise((r) => setTimeout(r, 1_000));
  }
  return false;
}

export async function fuzz(
  baseUrl: string,
  world: World,
  routes: Route[],
  o: FuzzOptions,
): Promise<FuzzReport> {
  const base = new URL(baseUrl);
  const agent = createAgent(o.concurrency);
  const report: FuzzReport = {
    seed: o.seed,
    sent: 0,
    generated: o.only ? o.only.length : o.requests,
    byClass: {},
    byStatus: {},
    byRoute: {},
    byPlan: {},
    failures: [],
    crashed: false,
    ms: 0,
    setupCalls: 0,
    issues: [],
  };
  const started = Date.now();
  const indexes = o.only ?? Array.from({ length: o.requests }, (_, i) => i);
  const total = indexes.length + (o.probes?.length ?? 0);
  let next = 0;
  let stop = false;
  let refill: Promise<void> | undefined;

  const fail = (
    f: Finding,
    index: number,
    req: FuzzRequest | undefined,
    a: Answer | undefined,
    readyz?: string,
  ) =>
    report.failures.push({
      ...f,
      index,
      route: req?.route.key ?? '-',
      request: req,
      status: a?.status,
      answer: a?.text.slice(0, 2_000),
      ...(readyz ? { readyz } : {}),
    });

  /** Sends one request, checks the answer; false when the process stopped answering. */
  async function handle(req: FuzzRequest): Promise<boolean> {
    const index = req.index;
    const t0 = Date.now();
    const a = await send(base, req, agent, o.timeoutMs);
    report.sent++;
    inc(report.byPlan, req.plan);
    const byRoute = (report.byRoute[req.route.key] ??= {});
    if (!answered(a)) {
      inc(report.byClass, 'no answer');
      inc(byRoute, 'no answer');
      const alive = await healthy(base);
      // Node's parser refuses a request whose request line and headers pass 16 KB: the answer
      // to it is what the service writes on the raw socket, or a reset.
      const size = req.url.length + Object.entries(req.headers).flat(2).join('').length;
      const why = size > 16_000 ? ' (request line and headers over 16 KB)' : '';
      fail(
        { kind: alive ? 'no-answer' : 'crash', detail: `${a.error}${why}` },
        index,
        req,
        undefined,
      );
      return alive;
    }
    if (o.traceFile)
      fs.appendFileSync(
        o.traceFile,
        `${JSON.stringify({ index, route: req.route.key, method: req.method, url: req.url.slice(0, 300), plan: req.plan, notes: req.notes, body: req.bodyText?.slice(0, 300), status: a.status, answer: a.text.slice(0, 300) })}\n`,
      );
    const cls = `${Math.floor(a.status / 100)}xx`;
    inc(report.byClass, cls);
    inc(report.byStatus, String(a.status));
    inc(byRoute, cls);
    const findings = check(req, a, world, t0);
    let readyz: string | undefined;
    if (a.status === 503) readyz = (await probe(base, '/readyz')).text;
    for (const f of findings) fail(f, index, req, a, readyz);
    taint(req, a, world);
    learn(req, a, world);
    if (report.sent % 250 === 0) {
      o.log(`${report.sent}/${total} sent, ${report.failures.length} failures`);
      if (!(await healthy(base))) {
        fail({ kind: 'crash', detail: '/healthz stopped answering' }, index, req, a);
        return false;
      }
    }
    return true;
  }

  async function worker() {
    while (!stop && next < indexes.length) {
      const index = indexes[next++]!;
      if ((index > 0 && index % o.replenishEvery === 0) || world.dirty) {
        refill ??= world.replenish().finally(() => (refill = undefined));
      }
      if (refill && index % o.replenishEvery === 0) await refill;
      if (!(await handle(buildRequest(world, routes, o.seed, index)))) {
        report.crashed = true;
        stop = true;
      }
    }
  }

  for (const req of o.probes ?? []) {
    if (!(await handle(req))) {
      report.crashed = true;
      stop = true;
      break;
    }
  }
  await Promise.all(Array.from({ length: o.concurrency }, () => worker()));
  await refill;
  if (!report.crashed && !(await healthy(base))) {
    report.crashed = true;
    fail(
      { kind: 'crash', detail: '/healthz not answering after the run' },
      -1,
      undefined,
      undefined,
    );
  }
  agent.destroy();
  report.ms = Date.now() - started;
  report.setupCalls = world.setupCalls;
  report.issues = [...world.issues];
  for (const issue of world.issues)
    if (/→ 5\d\d/.test(issue))
      fail({ kind: 'server-error', detail: issue }, -1, undefined, undefined);
  if (o.outDir && report.failures.length > 0) writeFailures(o.outDir, report);
  return report;
}

function writeFailures(dir: string, r: FuzzReport) {
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `failures-seed-${r.seed}.json`);
  const rows = r.failures.map((f) => ({
    ...f,
    request: f.request && {
      method: f.request.method,
      url: f.request.url,
      headers: f.request.headers,
      bodyBase64: f.request.body?.toString('base64'),
      notes: f.request.notes,
      plan: f.request.plan,
    },
  }));
  fs.writeFileSync(file, JSON.stringify(rows, null, 2));
}

const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n)}… (${s.length} chars)` : s);

/** The request as a curl command (bodies over 2 KB are summarised). */
export function curlOf(baseUrl: string, req: FuzzRequest): string {
  const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  const verb = req.method === 'HEAD' ? 'curl -I' : `curl -i -X ${req.method}`;
  const parts = [verb, q(`${baseUrl}${clip(req.url, 2_000)}`)];
  for (const [k, v] of Object.entries(req.headers))
    for (const x of [v].flat()) parts.push(`-H ${q(`${k}: ${clip(x, 300)}`)}`);
  if (req.body) {
    const text = req.body.toString('utf8');
    const printable = Buffer.from(text, 'utf8').equals(req.body) && !text.includes('\u0000');
    parts.push(
      printable && text.length <= 2_000
        ? `--data-binary ${q(text)}`
        : `--data-binary @<${req.body.length} bytes; base64 in the failures file>`,
    );
  }
  return parts.join(' ');
}

export function formatReport(r: FuzzReport, baseUrl: string, maxExamples = 3): string {
  const lines: string[] = [];
  const table = (o: Record<string, number>) =>
    Object.entries(o)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, v]) => `${k}: ${v}`)
      .join(', ');
  lines.push(
    `fuzz seed ${r.seed}: ${r.sent} requests (${r.generated} generated, the rest fixed probes) in ${(r.ms / 1000).toFixed(1)} s; ${r.setupCalls} setup calls besides`,
  );
  lines.push(`  by status class: ${table(r.byClass)}`);
  lines.push(`  by status: ${table(r.byStatus)}`);
  lines.push(`  by credential plan: ${table(r.byPlan)}`);
  lines.push('  by route:');
  for (const [route, counts] of Object.entries(r.byRoute).sort(([a], [b]) => a.localeCompare(b))) {
    const total = Object.values(counts).reduce((s, n) => s + n, 0);
    lines.push(`    ${String(total).padStart(5)}  ${route}  (${table(counts)})`);
  }
  const kinds: Record<string, number> = {};
  for (const f of r.failures) inc(kinds, f.kind);
  lines.push(
    `  failures: ${r.failures.length}${r.failures.length ? ` (${table(kinds)})` : ''}${r.crashed ? ' — THE PROCESS STOPPED ANSWERING /healthz' : ''}`,
  );
  const groups = new Map<string, FailureRecord[]>();
  for (const f of r.failures) {
    let code = '';
    try {
      code = String((JSON.parse(f.answer ?? '') as { code?: string }).code ?? '');
    } catch {
      /* not JSON */
    }
    const k = `${f.kind} | ${f.route} | ${f.status ?? '-'} ${code}`;
    groups.set(k, [...(groups.get(k) ?? []), f]);
  }
  for (const [k, fs] of groups) {
    lines.push(`\n  ✗ ${k}  ×${fs.length}`);
    for (const f of fs.slice(0, maxExamples)) {
      lines.push(`    seed ${r.seed} request #${f.index}: ${f.detail}`);
      if (f.readyz) lines.push(`      /readyz right after: ${f.readyz}`);
      if (f.request) {
        lines.push(
          `      broken: ${f.request.notes.join('; ') || '(nothing: a valid request)'}; credentials: ${f.request.plan}`,
        );
        lines.push(`      ${curlOf(baseUrl, f.request)}`);
      }
      if (f.answer !== undefined) lines.push(`      → ${f.status} ${clip(f.answer, 300)}`);
    }
  }
  if (r.issues.length > 0) lines.push(`  setup notes: ${r.issues.slice(0, 5).join(' | ')}`);
  // Probes (negative indexes) run in every run; --only repeats a generated request.
  const first = r.failures.find((f) => f.index >= 0);
  lines.push(
    `  reproduce: npm run fuzz -- --seed=${r.seed} --requests=${r.generated}${first ? ` (one request: --only=${first.index})` : ''}`,
  );
  return lines.join('\n');
}
