import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { serialConsumer } from '../../shared/bus/consumer.js';
import type { DeadLetter } from '../../shared/bus/dlq.js';
import { AppError } from '../../shared/errors.js';
import type { Runtime } from '../../shared/runtime.js';
import { projectRoot } from '../../infra/local/paths.js';
import { collectTopic } from '../helpers/kafka.js';
import { testRuntime } from '../helpers/stack.js';

/**
 * `npm run dlq -- list|redrive` against real Kafka: messages a consumer could never process
 * are dead-lettered by the consumer runner itself, then the command (run as a user runs it,
 * `bin/dlq.ts` in a process of its own) lists them and re-publishes them to where they came
 * from, once.
 */

let rt: Runtime;
beforeAll(async () => {
  rt = await testRuntime('dlq');
});
afterAll(async () => {
  await rt.close();
});

const run = promisify(execFile);
/** The command, with the test runtime's Kafka, DynamoDB and prefixes. */
async function dlq(...args: string[]): Promise<string> {
  const { stdout } = await run(
    process.execPath,
    ['--import', 'tsx', path.join(projectRoot, 'bin', 'dlq.ts'), ...args],
    {
      cwd: projectRoot,
      env: {
        PATH: process.env.PATH,
        LOG_LEVEL: 'warn',
        KAFKA_BROKERS: rt.config.KAFKA_BROKERS,
        DYNAMODB_ENDPOINT: rt.config.DYNAMODB_ENDPOINT,
        TOPIC_PREFIX: rt.config.TOPIC_PREFIX,
        TABLE_PREFIX: rt.config.TABLE_PREFIX,
      },
      timeout: 60_000,
    },
  );
  return stdout;
}

describe('npm run dlq', () => {
  it('lists what was dead-lettered, redrives it to its topic once, and marks it redriven', async () => {
    const runner = serialConsumer({
      kafka: rt.kafka,
      groupId: `${rt.config.TOPIC_PREFIX}dlq-test`,
      handlers: {
        [rt.topics.notifications]: async (event) => {
          if ((event as { kind: string }).kind === 'poison')
            throw new AppError('SVC_VALIDATION_FAILED', 'not an event');
        },
      },
      deadLetterTopic: rt.topics.deadLetter,
      producer: rt.producer,
      log: rt.log,
      registry: rt.registry,
    });
    await runner.start();
    await rt.producer.send([
      { topic: rt.topics.notifications, key: 'k1', value: JSON.stringify({ kind: 'poison' }) },
      { topic: rt.topics.notifications, key: 'k2', value: '{not json' },
      { topic: rt.topics.notifications, key: 'k3', value: JSON.stringify({ kind: 'fine' }) },
    ]);
    const dead = await collectTopic(rt.kafka, rt.topics.deadLetter);
    await vi.waitFor(() => expect(dead.messages).toHaveLength(2), { timeout: 15_000 });
    await runner.stop();
    await dead.stop();

    const listed = (await dlq('list', '--json'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as DeadLetter);
    expect(listed.map((d) => [d.code, d.key, d.value, d.redriven]).sort()).toEqual([
      ['SVC_BAD_JSON', 'k2', '{not json', false],
      ['SVC_VALIDATION_FAILED', 'k1', JSON.stringify({ kind: 'poison' }), false],
    ]);
    expect(listed.every((d) => d.source.topic === rt.topics.notifications)).toBe(true);
    expect(listed.every((d) => d.source.group === `${rt.config.TOPIC_PREFIX}dlq-test`)).toBe(true);

    // Redrive: both go back to the notifications topic, without their dead-letter headers.
    const back = await collectTopic(rt.kafka, rt.topics.notifications);
    const out = await dlq('redrive');
    expect(out).toContain('2 redriven, 0 left');
    await vi.waitFor(
      () => expect(back.messages.filter((m) => m.headers['x-redriven-from'])).toHaveLength(2),
      { timeout: 15_000 },
    );
    const redriven = back.messages.filter((m) => m.headers['x-redriven-from']);
    expect(redriven.map((m) => m.key).sort()).toEqual(['k1', 'k2']);
    expect(redriven.every((m) => !Object.keys(m.headers).some((h) => h.startsWith('x-dlq-')))).toBe(
      true,
    );

    // A second run sends nothing again, and the list shows them as redriven.
    expect(await dlq('redrive')).toContain('0 redriven, 0 left');
    const after = await dlq('list');
    expect(after).toContain('2 dead-lettered, 0 not redriven');
    expect(back.messages.filter((m) => m.headers['x-redriven-from'])).toHaveLength(2);
    await back.stop();
  });
});
