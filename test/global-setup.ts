import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import type { TestProject } from 'vitest/node';
import { upStack, type StackHandle } from '../infra/local/stack.js';

declare module 'vitest' {
  export interface ProvidedContext {
    kafkaBrokers: string;
    dynamoEndpoint: string;
  }
}

let stack: StackHandle | undefined;

/** What the suite needs on the machine, and the package that provides it. */
const prerequisites: { what: string; found: () => boolean; install: string }[] = [
  { what: 'java', found: () => onPath('java'), install: 'openjdk-17-jre-headless' },
  {
    what: 'chromium',
    found: () => fs.existsSync(process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'),
    install: 'chromium',
  },
  { what: 'promtool', found: () => onPath('promtool'), install: 'prometheus' },
  { what: 'prometheus', found: () => onPath('prometheus'), install: 'prometheus' },
];

function onPath(cmd: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
}

/** Stops the run with one line naming what to install, before anything starts. */
export function checkPrerequisites(): void {
  const missing = prerequisites.filter((p) => !p.found());
  if (missing.length === 0) return;
  const pkgs = [...new Set(missing.map((m) => m.install))].join(' ');
  throw new Error(
    `missing ${missing.map((m) => m.what).join(', ')}: install with \`apt-get install -y ${pkgs}\` (or run .ci/run, which does)`,
  );
}

/**
 * Starts a throw-away real stack (Kafka KRaft + in-memory DynamoDB Local on free ports) for
 * the run, or reuses the one named by TEST_KAFKA_BROKERS and TEST_DYNAMODB_ENDPOINT.
 */
export async function setup(project: TestProject) {
  checkPrerequisites();
  const brokers = process.env.TEST_KAFKA_BROKERS;
  const endpoint = process.env.TEST_DYNAMODB_ENDPOINT;
  if (brokers && endpoint) {
    project.provide('kafkaBrokers', brokers);
    project.provide('dynamoEndpoint', endpoint);
    return;
  }
  stack = await upStack({
    mode: 'ephemeral',
    readyTimeoutMs: 90_000,
    // Each test process's consumer groups are new and short-lived: none waits for more members.
    kafkaInitialRebalanceDelayMs: 0,
    log: (m) => process.stdout.write(`[stack] ${m}\n`),
  });
  // If the run dies without teardown (a crash, a kill), the JVMs stop with it: they watch this
  // process (infra/local/proc.ts, spawnJava).
  process.stdout.write(
    `[stack] Kafka ${stack.kafka.version} at ${stack.kafkaBrokers}, DynamoDB Local ${stack.dynamodb.version} at ${stack.dynamoEndpoint}\n`,
  );
  project.provide('kafkaBrokers', stack.kafkaBrokers);
  project.provide('dynamoEndpoint', stack.dynamoEndpoint);
}

export async function teardown() {
  await stack?.stop();
}
