import type { TestProject } from 'vitest/node';
import { upStack, type StackHandle } from '../infra/local/stack.js';

declare module 'vitest' {
  export interface ProvidedContext {
    kafkaBrokers: string;
    dynamoEndpoint: string;
  }
}

let stack: StackHandle | undefined;

/**
 * Starts a throw-away real stack (Kafka KRaft + in-memory DynamoDB Local on free ports) for
 * the run, or reuses the one named by TEST_KAFKA_BROKERS and TEST_DYNAMODB_ENDPOINT.
 */
export async function setup(project: TestProject) {
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
    log: (m) => process.stdout.write(`[stack] ${m}\n`),
  });
  // If the run dies without teardown (a crash, a kill), the JVMs must not outlive it.
  const started = stack;
  process.on('exit', () => started.killSync());
  process.stdout.write(
    `[stack] Kafka ${stack.kafka.version} at ${stack.kafkaBrokers}, DynamoDB Local ${stack.dynamodb.version} at ${stack.dynamoEndpoint}\n`,
  );
  project.provide('kafkaBrokers', stack.kafkaBrokers);
  project.provide('dynamoEndpoint', stack.dynamoEndpoint);
}

export async function teardown() {
  await stack?.stop();
}
