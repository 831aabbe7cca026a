import fs from 'node:fs';
import { projectRoot, stackPaths } from '../../infra/local/paths.js';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import {
  AppProcess,
  ChaosStack,
  Receiver,
  createTenant,
  ledgerBalance,
  describeUndelivered,
  postConsents,
  tally,
  waitDelivered,
  type Accepted,
  type Balance,
  type LoadResult,
  type Log,
  type Tally,
  type Tenant,
} from './harness.js';
import { judgeMemory, mib, type MemorySample, type SoakMemory } from './memory.js';

/**
 * The fault scenarios. Each starts real processes on a stack of its own, posts consents at a
 * steady rate over REST, injects one fault in the middle of the load, waits for every
 * accepted consent's signed consent.granted webhook and then balances the ledger.
 */

export const scenarioNames = [
  'app-kill',
  'power-cut',
  'stalled-kill',
  'kafka-stall',
  'dynamodb-stall',
  'kafka-restart',
  'dynamodb-restart',
  'worker-kill',
  'workers-down',
  'soak',
] as const;
export type ScenarioName = (typeof scenarioNames)[number];

export interface ScenarioOptions {
  /** Consents per second, for how long, and when in the load the fault starts. */
  rate: number;
  loadMs: number;
  faultAtMs?: number;
  /** How long a stall or an outage lasts. */
  faultMs: number;
  /** How long to wait for the backlog to drain before counting what is lost. */
  drainMs: number;
  log: Log;
  /** The soak's endpoints (one of them failing). */
  endpoints?: number;
  /** A stack to run on (tests share one per file); by default each scenario starts its own. */
  stack?: ChaosStack;
  /** Extra environment for the service processes. */
  env?: Record<string, string>;
  /** How long the load generator waits for an answer before counting none (5 s). */
  answerTimeoutMs?: number;
  /** The soak: minutes into the load at which to write a heap snapshot of the process. */
  heapAtMin?: number[];
  /** Extra options for the service processes' node. */
  nodeArgs?: string[];
}

export interface ScenarioResult {
  scenario: string;
  tally: Tally;
  balance: Balance;
  /** Accepted consents the service no longer has a record of (GET answered 404). */
  unstored: number;
  load: LoadResult;
  /** Seconds from the end of the fault until the last accepted consent was delivered. */
  drainS: number;
  /** /readyz 3 s into the fault. */
  readiness?: Readiness;
  /** When the fault started and ended (epoch ms). */
  fault?: { startedAt: number; endedAt: number };
  /** stalled-kill: events the restarted process's relay published for the killed one. */
  relayed?: number;
  memory?: SoakMemory;
  passed: boolean;
  failures: string[];
}

interface World {
  stack: ChaosStack;
  receiver: Receiver;
  apps: AppProcess[];
  ingress: () => string[];
  tenants: Tenant[];
  dir: string;
  ownStack: boolean;
}

const adminToken = `chaos_admin_${'x'.repeat(24)}`;

async function setup(
  name: string,
  layout: 'one' | 'split',
  o: ScenarioOptions,
  endpoints = 1,
): Promise<World> {
  const stack = o.stack ?? (await ChaosStack.create(o.log));
  const receiver = new Receiver();
  await receiver.start();
  // Process logs outlive the run (the stack's folder does not): .svc/chaos/<scenario>-<time>/.
  const dir = path.join(
    stackPaths().root,
    'chaos',
    `${name}-${new Date().toISOString().replace(/[:.]/g, '-')}`,
  );
  fs.mkdirSync(dir, { recursive: true });
  const prefix = `chaos${Date.now().toString(36)}`;
  const base = {
    stack,
    prefix,
    adminToken,
    logDir: dir,
    ...(o.env ? { env: o.env } : {}),
    ...(o.nodeArgs ? { nodeArgs: o.nodeArgs } : {}),
  };
  const apps =
    layout === 'one'
      ? [new AppProcess({ ...base, role: 'all', name: `${name}-app` })]
      : [
          new AppProcess({ ...base, role: 'ingress', name: `${name}-ingress` }),
          new AppProcess({ ...base, role: 'workers', name: `${name}-workers-1` }),
          new AppProcess({ ...base, role: 'workers', name: `${name}-workers-2` }),
        ];
  // The first process creates tables and topics; the others find them.
  await apps[0]!.start();
  await Promise.all(apps.slice(1).map((a) => a.start()));
  const ingress = () => apps.filter((a) => a.o.role !== 'workers').map((a) => a.url);
  const tenants: Tenant[] = [];
  for (let i = 0; i < endpoints; i++) {
    const endpoint = i === 0 && endpoints > 1 ? 'failing-0' : `ep-${i}`;
    tenants.push(await createTenant(ingress()[0]!, adminToken, receiver, endpoint));
    if (endpoint.startsWith('failing')) receiver.failing.add(endpoint);
  }
  await warmUp(ingress()[0]!, tenants[0]!, o.log);
  o.log(
    `[${name}] stack, ${apps.length} process(es) and ${endpoints} app(s) ready; logs in ${dir}`,
  );
  return { stack, receiver, apps, ingress, tenants, dir, ownStack: o.stack === undefined };
}

/**
 * Freshly started JVMs and processes answer slowly at first: consents are posted one at a
 * time (not counted) until one is stored in under a second, or a minute has passed.
 */
async function warmUp(baseUrl: string, tenant: Tenant, log: Log): Promise<void> {
  const until = Date.now() + 60_000;
  for (let i = 0; Date.now() < until; i++) {
    const t0 = Date.now();
    const status = await fetch(`${baseUrl}/api/v1/consents`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        userId: `warm-${Date.now().toString(36)}-${i}`,
        email: `warm-${i}@example.com`,
        consents: { analytics: true },
      }),
      signal: AbortSignal.timeout(10_000),
    }).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 201 && Date.now() - t0 < 1_000) return;
    await delay(200);
  }
  log('warm-up: no consent was stored in under a second within a minute; going on');
}

async function teardown(w: World): Promise<void> {
  await Promise.allSettled(w.apps.map((a) => a.stop()));
  await w.receiver.stop();
  if (w.ownStack) await w.stack.stop();
}

/** Runs the load with `fault` started halfway through; returns when the load ended. */
async function loadWithFault(
  w: World,
  name: string,
  o: ScenarioOptions,
  fault: () => Promise<void>,
): Promise<{
  load: LoadResult;
  fault: { startedAt: number; endedAt: number };
  readiness: Readiness;
}> {
  const load = postConsents({
    targets: w.ingress,
    tenants: w.tenants,
    rate: o.rate,
    durationMs: o.loadMs,
    runId: `${name}-${Date.now().toString(36)}`,
    ...(o.answerTimeoutMs ? { answerTimeoutMs: o.answerTimeoutMs } : {}),
  });
  await delay(o.faultAtMs ?? o.loadMs / 2);
  o.log(`[${name}] fault starts`);
  const startedAt = Date.now();
  // What /readyz says 3 s into the fault, and how fast.
  const [, readiness] = await Promise.all([
    fault(),
    delay(3_000).then(() => probeReadiness(w.ingress()[0]!)),
  ]);
  const endedAt = Date.now();
  o.log(`[${name}] fault over; /readyz during it: ${JSON.stringify(readiness)}`);
  return { load: await load, fault: { startedAt, endedAt }, readiness };
}

export interface Readiness {
  status: number | 'none';
  ms: number;
  body: { status?: string; unavailable?: string[] };
}

async function probeReadiness(url: string): Promise<Readiness> {
  const t0 = Date.now();
  try {
    const r = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(5_000) });
    return { status: r.status, ms: Date.now() - t0, body: (await r.json()) as Readiness['body'] };
  } catch {
    return { status: 'none', ms: Date.now() - t0, body: {} };
  }
}

/**
 * Accepted consents whose record the service no longer has: each answered 201 is read back
 * over REST (`GET /api/v1/consents/{userId}`, 16 at a time); a 404 is a consent the store lost
 * after acknowledging it. Other answers are retried for a while (the store may still be busy).
 */
async function unstoredConsents(baseUrl: string, accepted: Accepted[], log: Log): Promise<number> {
  const queue = [...accepted];
  const missing: Accepted[] = [];
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      for (let a = queue.pop(); a !== undefined; a = queue.pop()) {
        for (let tries = 0; ; tries++) {
          const r = await fetch(`${baseUrl}/api/v1/consents/${encodeURIComponent(a.userId)}`, {
            headers: { authorization: `Bearer ${a.tenant.apiKey}` },
            signal: AbortSignal.timeout(5_000),
          }).catch(() => undefined);
          if (r?.status === 200) break;
          if (r?.status === 404) {
            missing.push(a);
            break;
          }
          if (tries >= 20) throw new Error(`GET consent ${a.userId}: ${r?.status ?? 'no answer'}`);
          await delay(500);
        }
      }
    }),
  );
  for (const a of missing.slice(0, 20)) log(`  unstored: ${a.userId} (${a.referenceId})`);
  return missing.length;
}

async function judge(
  name: string,
  w: World,
  load: LoadResult,
  faultEndedAt: number,
  o: ScenarioOptions,
): Promise<ScenarioResult> {
  o.log(`[${name}] load done: ${JSON.stringify(load.answers)}; waiting for deliveries`);
  await waitDelivered(load.accepted, w.receiver, o.drainMs, o.log);
  const drainS = Math.max(0, (Date.now() - faultEndedAt) / 1000);
  const balance = await ledgerBalance(w.ingress()[0]!, load.accepted, w.receiver, {
    waitMs: 30_000,
    log: o.log,
    tenants: w.tenants,
  });
  const unstored = await unstoredConsents(w.ingress()[0]!, load.accepted, o.log);
  const final = tally(load.accepted, w.receiver);
  if (final.lost > 0)
    for (const line of await describeUndelivered(w.ingress()[0]!, load.accepted, w.receiver))
      o.log(`[${name}] undelivered: ${line}`);
  const failures: string[] = [];
  if (final.accepted === 0) failures.push('no consent was accepted');
  if (final.lost > 0) failures.push(`${final.lost} accepted consents never delivered`);
  if (final.multipleIds > 0) failures.push(`${final.multipleIds} consents under >1 webhook-id`);
  if (final.badSignatures > 0) failures.push(`${final.badSignatures} bad signatures`);
  if (final.changedCopies > 0)
    failures.push(`${final.changedCopies} copies with another body than their first receipt`);
  if (unstored > 0) failures.push(`${unstored} accepted consents not readable (GET 404)`);
  if (!balance.ok)
    failures.push(
      `ledger does not balance: ${balance.unbalanced} consents, ${balance.unrecorded} deliveries`,
    );
  return {
    scenario: name,
    tally: final,
    balance,
    unstored,
    load,
    drainS,
    passed: failures.length === 0,
    failures,
  };
}

function restartAfter(app: AppProcess, ms: number) {
  return async () => {
    app.kill9();
    await delay(ms);
    await app.start();
  };
}

export async function runScenario(name: ScenarioName, o: ScenarioOptions): Promise<ScenarioResult> {
  if (name === 'soak') return soak(o);
  const split = name === 'worker-kill' || name === 'workers-down';
  const w = await setup(name, split ? 'split' : 'one', o);
  try {
    const app = w.apps[0]!;
    const faults: Record<Exclude<ScenarioName, 'soak'>, () => Promise<void>> = {
      'app-kill': restartAfter(app, 1_500),
      'power-cut': async () => {
        app.kill9();
        await Promise.all([w.stack.kill('kafka'), w.stack.kill('dynamodb')]);
        await delay(1_500);
        await w.stack.up();
        await app.start();
      },
      'stalled-kill': async () => {
        // Kafka stalls, so every consent the app stores meanwhile is unpublished when it is
        // killed: the restarted process's relay must find them (in the entities table's
        // stream, from the dead process's checkpoint on) and publish them.
        w.stack.signal('kafka', 'SIGSTOP');
        await delay(o.faultMs);
        app.kill9();
        w.stack.signal('kafka', 'SIGCONT');
        await delay(1_500);
        await app.start();
      },
      'kafka-stall': async () => {
        w.stack.signal('kafka', 'SIGSTOP');
        await delay(o.faultMs);
        w.stack.signal('kafka', 'SIGCONT');
      },
      'dynamodb-stall': async () => {
        w.stack.signal('dynamodb', 'SIGSTOP');
        await delay(o.faultMs);
        w.stack.signal('dynamodb', 'SIGCONT');
      },
      'kafka-restart': async () => {
        await w.stack.kill('kafka');
        await delay(o.faultMs);
        await w.stack.up();
      },
      'dynamodb-restart': async () => {
        await w.stack.kill('dynamodb');
        await delay(o.faultMs);
        await w.stack.up();
      },
      'worker-kill': async () => {
        // One of the two worker copies dies for good; the other takes its partitions.
        w.apps[1]!.kill9();
      },
      'workers-down': async () => {
        // Both worker copies die while ingress keeps accepting: the events pile up in Kafka,
        // and on their return every one of them lies in the uncertain zone (it existed when
        // the partitions were assigned), the dispatcher's most expensive path, all at once.
        w.apps[1]!.kill9();
        w.apps[2]!.kill9();
        await delay(o.faultMs);
        await Promise.all([w.apps[1]!.start(), w.apps[2]!.start()]);
      },
    };
    const { load, fault, readiness } = await loadWithFault(w, name, o, faults[name]);
    const r = { ...(await judge(name, w, load, fault.endedAt, o)), readiness, fault };
    if (name === 'stalled-kill') {
      // Without events left to the relay the scenario proved nothing.
      r.relayed = await app.metric('svc_outbox_published_total', 'path="relay"');
      if (r.relayed === 0) {
        r.failures.push('the relay published nothing: no commit was left unpublished by the kill');
        r.passed = false;
      }
    }
    return r;
  } finally {
    await teardown(w);
  }
}

/**
 * The soak: a steady load over many endpoints, one of which always fails (its deliveries go
 * to the retry schedule), with the process's RSS and heap read every 10 s and judged by
 * test/chaos/memory.ts. `heapAtMin` writes heap snapshots of the process into
 * test-results/heap/ (compare two with test/chaos/heap-diff.ts).
 */
async function soak(o: ScenarioOptions): Promise<ScenarioResult> {
  const heapDir = path.join(
    projectRoot,
    'test-results',
    'heap',
    new Date().toISOString().replace(/[:.]/g, '-'),
  );
  const snapshots = o.heapAtMin ?? [];
  if (snapshots.length > 0) fs.mkdirSync(heapDir, { recursive: true });
  const w = await setup(
    'soak',
    'one',
    {
      ...o,
      nodeArgs: [
        ...(o.nodeArgs ?? []),
        ...(snapshots.length > 0
          ? ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${heapDir}`]
          : []),
      ],
    },
    o.endpoints ?? 20,
  );
  const timers: NodeJS.Timeout[] = [];
  try {
    const app = w.apps[0]!;
    await delay(2_000);
    const t0 = Date.now();
    const samples: MemorySample[] = [];
    // RSS from /proc; the heap from /metrics, which a busy process may leave unanswered for
    // a while (asked again for up to 20 s, else NaN: the rule needs a reading per window).
    const sample = async () => {
      const atMs = Date.now() - t0;
      const rssBytes = app.rss();
      let heapBytes = NaN;
      for (let i = 0; i < 4 && !Number.isFinite(heapBytes); i++) heapBytes = await app.heapUsed();
      samples.push({ atMs, rssBytes, heapBytes });
    };
    const sampler = setInterval(() => void sample(), 10_000);
    for (const m of snapshots)
      timers.push(
        setTimeout(() => {
          const file = `soak-min${m}.heapsnapshot`;
          void app.heapSnapshot(heapDir, file).then(
            () => o.log(`[soak] heap snapshot ${path.join(heapDir, file)}`),
            (e: Error) => o.log(`[soak] heap snapshot at minute ${m}: ${e.message}`),
          );
        }, m * 60_000),
      );
    const load = await postConsents({
      targets: w.ingress,
      tenants: w.tenants,
      rate: o.rate,
      durationMs: o.loadMs,
      runId: `soak-${Date.now().toString(36)}`,
    });
    clearInterval(sampler);
    await sample();
    const r = await judge('soak', w, load, Date.now(), o);
    const m = judgeMemory(samples, o.loadMs);
    r.failures.push(...m.failures);
    if (m.memory) r.memory = m.memory;
    r.passed = r.failures.length === 0;
    return r;
  } finally {
    for (const t of timers) clearTimeout(t);
    await teardown(w);
  }
}

/** One line per result, as printed by `npm run chaos` and the tests. */
/** Where the slow answers' requests were sent: before, during or after the fault. */
function slowAgainstFault(r: ScenarioResult): string {
  const at = r.load.slow;
  if (!r.fault || !at.length) return '';
  const { startedAt, endedAt } = r.fault;
  const before = at.filter((t) => t < startedAt).length;
  const during = at.filter((t) => t >= startedAt && t < endedAt).length;
  const after = at.length - before - during;
  const lastS = Math.max(...at.map((t) => (t - endedAt) / 1000));
  return ` (sent before the fault ${before}, during ${during}, after ${after}${after ? `, the last ${lastS.toFixed(0)} s after it` : ''})`;
}

export function report(r: ScenarioResult): string {
  const t = r.tally;
  const m = r.memory;
  const mem = m
    ? `\n  rss ${mib(m.reference.rssBytes)} at minute ${(m.reference.atMs / 60_000).toFixed(1)} → ${mib(m.end.rssBytes)} at the end (limit ${mib(m.rssLimitBytes)}); heap low-water over the last half ${m.lowWater.map((w) => mib(w.heapBytes)).join(', ')}: rise ${mib(m.lowWaterRiseBytes)} (limit ${mib(m.lowWaterLimitBytes)})`
    : '';
  return (
    [
      `${r.scenario}: ${r.passed ? 'PASS' : 'FAIL'}`,
      `accepted ${t.accepted}`,
      `delivered ${t.delivered}`,
      `lost ${t.lost}`,
      `copies ${t.copies} (${t.sameAttemptCopies} of the same attempt)`,
      `>1 webhook-id ${t.multipleIds}`,
      `changed copies ${t.changedCopies}`,
      `ledger ${r.balance.ok ? 'balances' : `does not balance (${r.balance.unbalanced} consents, ${r.balance.unrecorded} deliveries)`}`,
      `unstored ${r.unstored}`,
      `answers ${JSON.stringify(r.load.answers)}`,
      `slow(>2s) ${r.load.slow.length}${slowAgainstFault(r)}`,
      `drained ${r.drainS.toFixed(0)} s after the fault`,
      ...(r.relayed === undefined ? [] : [`relayed ${r.relayed}`]),
    ].join(' | ') +
    mem +
    (r.failures.length ? `\n  ${r.failures.join('\n  ')}` : '')
  );
}
