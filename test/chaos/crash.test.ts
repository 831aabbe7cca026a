import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChaosStack } from './harness.js';
import { report, runScenario, type ScenarioName } from './scenarios.js';

/**
 * Fault scenarios with processes killed (`npm run chaos` runs the same with a longer load):
 * real service processes on a Kafka and DynamoDB Local of this file's own, consents over REST,
 * every accepted one's signed webhook awaited, and the ledger balanced through its API.
 */
let stack: ChaosStack;
const log = (m: string) => process.stdout.write(`[chaos] ${m}\n`);
beforeAll(async () => {
  stack = await ChaosStack.create(log);
}, 180_000);
afterAll(async () => {
  await stack?.stop();
}, 60_000);

const options = {
  rate: 10,
  loadMs: 16_000,
  faultAtMs: 6_000,
  faultMs: 0,
  drainMs: 90_000,
  log,
  // Two stacks and several service processes share this machine's two cores with the other
  // fault file: the answer deadline and store timeout are widened so a starved CPU is not
  // taken for a fault (`npm run chaos` measures with the defaults, 1.8 s and 2 s). A killed
  // member's partitions move after its session times out: 10 s keeps the test short.
  env: {
    CONSUMER_SESSION_TIMEOUT_MS: '10000',
    HTTP_DEADLINE_MS: '4000',
    DYNAMODB_REQUEST_TIMEOUT_MS: '3000',
  },
  answerTimeoutMs: 10_000,
};

describe('no accepted consent is lost when processes die', () => {
  for (const name of ['app-kill', 'worker-kill', 'power-cut'] as ScenarioName[]) {
    it(`${name}: every consent answered 201 reaches its webhook under one webhook-id, and the ledger balances`, async () => {
      const r = await runScenario(name, { ...options, stack });
      log(report(r));
      // Enough accepted work to make "lost 0" mean something, even on a starved machine.
      expect(r.tally.accepted).toBeGreaterThanOrEqual(10);
      expect(r.failures).toEqual([]);
      expect(r.tally.lost).toBe(0);
      expect(r.tally.multipleIds).toBe(0);
      expect(r.tally.changedCopies).toBe(0);
      expect(r.balance.ok).toBe(true);
    }, 300_000);
  }

  it('stalled-kill: the events a process stored while Kafka stalled are published by the relay after it is killed', async () => {
    // Kafka stalled for 5 s, then the app killed with every consent of the stall unpublished;
    // the restarted process's relay finds them in the entities table's stream.
    const r = await runScenario('stalled-kill', { ...options, faultMs: 5_000, stack });
    log(report(r));
    expect(r.tally.accepted).toBeGreaterThanOrEqual(10);
    expect(r.failures).toEqual([]);
    expect(r.relayed).toBeGreaterThan(0);
    expect(r.tally.lost).toBe(0);
    expect(r.tally.multipleIds).toBe(0);
    expect(r.tally.changedCopies).toBe(0);
    expect(r.balance.ok).toBe(true);
  }, 300_000);

  it('workers-down: a backlog that returns all uncertain is drained, nothing lost, the ledger balances', async () => {
    // Both worker processes dead for 8 s while ingress accepts; on their return every waiting
    // event is in the uncertain zone (the dispatcher's lookup-and-conditional-write path).
    const r = await runScenario('workers-down', { ...options, faultMs: 8_000, stack });
    log(report(r));
    expect(r.tally.accepted).toBeGreaterThanOrEqual(10);
    expect(r.failures).toEqual([]);
    expect(r.tally.lost).toBe(0);
    expect(r.tally.multipleIds).toBe(0);
    expect(r.tally.changedCopies).toBe(0);
    expect(r.balance.ok).toBe(true);
  }, 300_000);
});
