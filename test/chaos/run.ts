import { parseArgs } from 'node:util';
import {
  report,
  runScenario,
  scenarioNames,
  type ScenarioName,
  type ScenarioResult,
} from './scenarios.js';

/**
 * `npm run chaos -- <scenario>|all [--rate=60] [--fault-s=30] [--load-s] [--drain-s=240]`
 * (the soak: 50 consents/s, i.e. 100 events/s, for 600 s over 20 endpoints, one failing)
 * Runs fault scenarios against real processes on a stack of their own and prints, per
 * scenario: accepted, delivered, lost, copies, consents under more than one webhook-id, and
 * whether the ledger balances. Exits 1 when any scenario fails.
 */
const cli: Record<string, { scenario: ScenarioName; faultS?: number }> = {
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

const { values, positionals } = parseArgs({
  args: process.argv.slice(2),
  options: {
    rate: { type: 'string' },
    'fault-s': { type: 'string' },
    'load-s': { type: 'string' },
    'drain-s': { type: 'string', default: '240' },
  },
  allowPositionals: true,
  strict: true,
});
const wanted =
  positionals[0] === 'all' ? Object.keys(cli).filter((k) => k !== 'soak') : positionals;
const unknown = wanted.filter((w) => !(w in cli));
if (wanted.length === 0 || unknown.length > 0) {
  process.stderr.write(
    `usage: npm run chaos -- <scenario>… | all   [--rate=N] [--fault-s=N] [--load-s=N] [--drain-s=N]\nscenarios: ${Object.keys(cli).join(', ')}\n`,
  );
  process.exit(2);
}

const log = (m: string) => process.stdout.write(`${new Date().toISOString().slice(11, 19)} ${m}\n`);
const results: ScenarioResult[] = [];
for (const name of wanted) {
  const c = cli[name]!;
  const soak = c.scenario === 'soak';
  const faultS = Number(values['fault-s'] ?? c.faultS ?? 0);
  const loadS = Number(values['load-s'] ?? (soak ? 600 : 15 + faultS + 15));
  log(`=== ${name} ===`);
  const r = await runScenario(c.scenario, {
    // The soak's 100 events/s: each consent is two events (consent.created, consent.granted).
    rate: Number(values.rate ?? (soak ? 50 : 60)),
    loadMs: loadS * 1000,
    faultAtMs: 15_000,
    faultMs: faultS * 1000,
    drainMs: Number(values['drain-s']) * 1000,
    log,
    endpoints: 20,
  });
  r.scenario = name;
  results.push(r);
  log(report(r));
}
process.stdout.write(`\n${results.map(report).join('\n')}\n`);
process.exit(results.every((r) => r.passed) ? 0 : 1);
