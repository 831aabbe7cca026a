import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { commit, envSettings, machine, reproduce, writeResult } from '../../bench/record.js';
import {
  report,
  runScenario,
  scenarioNames,
  type ScenarioName,
  type ScenarioResult,
} from './scenarios.js';

/**
 * `npm run chaos -- <scenario>|all [--rate=60] [--fault-s=30] [--load-s] [--drain-s=240]`
 * (the soak: 50 consents/s, i.e. 100 events/s, for 600 s over 20 endpoints, one failing;
 * `--heap-at=2,8` writes heap snapshots of its process at those minutes into test-results/heap/)
 * Runs fault scenarios against real processes on a stack of their own and prints, per
 * scenario: accepted, delivered, lost, copies, consents under more than one webhook-id, and
 * whether the ledger balances, and writes it to test/chaos/results/<scenario>.json. Exits 1 when
 * any scenario fails.
 */
export const cli: Record<string, { scenario: ScenarioName; faultS?: number }> = {
  'app-kill': { scenario: 'app-kill' },
  'power-cut': { scenario: 'power-cut' },
  'stalled-kill': { scenario: 'stalled-kill', faultS: 10 },
  'kafka-stall-30': { scenario: 'kafka-stall', faultS: 30 },
  'kafka-stall-120': { scenario: 'kafka-stall', faultS: 120 },
  'dynamodb-stall-30': { scenario: 'dynamodb-stall', faultS: 30 },
  'dynamodb-stall-120': { scenario: 'dynamodb-stall', faultS: 120 },
  'kafka-restart': { scenario: 'kafka-restart', faultS: 20 },
  'dynamodb-restart': { scenario: 'dynamodb-restart', faultS: 20 },
  'worker-kill': { scenario: 'worker-kill' },
  'workers-down-60': { scenario: 'workers-down', faultS: 60 },
  soak: { scenario: 'soak' },
};
void scenarioNames;

/** What `npm run chaos -- all` runs: every scenario but the soak. */
export const allScenarios = Object.keys(cli).filter((k) => k !== 'soak');
export const chaosResultsDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'results');

/** A scenario's figures as its result file keeps them (the accepted consents' list left out). */
function figures(r: ScenarioResult) {
  const slow = r.load.slow;
  const f = r.fault;
  return {
    ...r.tally,
    ledger: r.balance,
    unstored: r.unstored,
    answers: r.load.answers,
    slow: {
      count: slow.length,
      ...(f && {
        beforeFault: slow.filter((t) => t < f.startedAt).length,
        duringFault: slow.filter((t) => t >= f.startedAt && t < f.endedAt).length,
        afterFault: slow.filter((t) => t >= f.endedAt).length,
      }),
    },
    drainS: r.drainS,
    ...(f && { faultS: (f.endedAt - f.startedAt) / 1000 }),
    ...(r.readiness && { readiness: r.readiness }),
    ...(r.relayed !== undefined && { relayed: r.relayed }),
    ...(r.memory && { memory: r.memory }),
    failures: r.failures,
  };
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    args: process.argv.slice(2),
    options: {
      rate: { type: 'string' },
      'fault-s': { type: 'string' },
      'load-s': { type: 'string' },
      'drain-s': { type: 'string', default: '240' },
      'heap-at': { type: 'string' },
    },
    allowPositionals: true,
    strict: true,
  });
  const wanted = positionals[0] === 'all' ? allScenarios : positionals;
  const unknown = wanted.filter((w) => !(w in cli));
  if (wanted.length === 0 || unknown.length > 0) {
    process.stderr.write(
      `usage: npm run chaos -- <scenario>… | all   [--rate=N] [--fault-s=N] [--load-s=N] [--drain-s=N] [--heap-at=MIN,…]\nscenarios: ${Object.keys(cli).join(', ')}\n`,
    );
    process.exit(2);
  }

  const log = (m: string) =>
    process.stdout.write(`${new Date().toISOString().slice(11, 19)} ${m}\n`);
  const results: ScenarioResult[] = [];
  for (const name of wanted) {
    const c = cli[name]!;
    const soak = c.scenario === 'soak';
    const faultS = Number(values['fault-s'] ?? c.faultS ?? 0);
    const loadS = Number(values['load-s'] ?? (soak ? 600 : 15 + faultS + 15));
    log(`=== ${name} ===`);
    // The soak's 100 events/s: each consent is two events (consent.created, consent.granted).
    const rate = Number(values.rate ?? (soak ? 50 : 60));
    const drainS = Number(values['drain-s']);
    const r = await runScenario(c.scenario, {
      rate,
      loadMs: loadS * 1000,
      faultAtMs: 15_000,
      faultMs: faultS * 1000,
      drainMs: drainS * 1000,
      log,
      endpoints: 20,
      ...(values['heap-at'] ? { heapAtMin: values['heap-at'].split(',').map(Number) } : {}),
    });
    r.scenario = name;
    results.push(r);
    log(report(r));
    const to = writeResult(chaosResultsDir, {
      kind: 'chaos',
      name,
      command: reproduce(
        [
          `npm run chaos -- ${name}`,
          ...process.argv.slice(2).filter((a) => a.startsWith('--')),
        ].join(' '),
      ),
      date: new Date().toISOString(),
      commit: commit(),
      machine: machine(),
      settings: {
        ...envSettings(),
        scenario: c.scenario,
        rate,
        loadS,
        faultAtS: 15,
        faultS,
        drainS,
        endpoints: 20,
      },
      passed: r.passed,
      figures: figures(r),
    });
    log(`result: ${path.relative(process.cwd(), to)}`);
  }
  process.stdout.write(`\n${results.map(report).join('\n')}\n`);
  process.exit(results.every((r) => r.passed) ? 0 : 1);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
