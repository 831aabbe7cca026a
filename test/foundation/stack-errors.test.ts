import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { StackError } from '../../infra/local/errors.js';
import { ensureJars } from '../../infra/local/fetch.js';
import { stackPaths } from '../../infra/local/paths.js';
import { freePort, isAlive } from '../../infra/local/proc.js';
import { readPid, upStack } from '../../infra/local/stack.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-stack-errors-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** Paths in a temp folder that share the real jar cache (no second download). */
function tempPaths() {
  const real = stackPaths();
  return { ...stackPaths(path.join(tmp, String(Math.random()))), jars: real.jars };
}

describe('embedded stack: bad conditions give one clear line and leave nothing running', () => {
  it('a taken port is reported with the variable to change', async () => {
    const blocker = net.createServer();
    const port = await freePort();
    await new Promise<void>((r) => blocker.listen(port, '127.0.0.1', r));
    const paths = tempPaths();
    try {
      const err = await upStack({
        mode: 'persistent',
        paths,
        kafkaPort: port,
        dynamoPort: await freePort(),
      }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StackError);
      expect((err as Error).message).toMatch(
        new RegExp(`port ${port} \\(Kafka broker\\) is taken.*SVC_KAFKA_PORT`),
      );
      expect((err as Error).message).not.toContain('\n');
      // DynamoDB may have started in parallel; it must have been stopped again.
      const ddb = readPid(paths.run, 'dynamodb');
      expect(ddb === undefined || !isAlive(ddb.pid)).toBe(true);
    } finally {
      blocker.close();
    }
  });

  it('a stale pid file is removed and the stack starts; a second start reuses it', async () => {
    const paths = tempPaths();
    fs.mkdirSync(paths.run, { recursive: true });
    fs.writeFileSync(
      path.join(paths.run, 'kafka.pid'),
      JSON.stringify({ pid: 2 ** 22 + 1, port: 1, logFile: 'x' }),
    );
    const logs: string[] = [];
    const opts = {
      mode: 'persistent' as const,
      paths,
      kafkaPort: await freePort(),
      kafkaControllerPort: await freePort(),
      dynamoPort: await freePort(),
      log: (m: string) => logs.push(m),
    };
    const first = await upStack(opts);
    try {
      expect(logs.join('\n')).toContain('removing stale pid file');
      expect(first.kafka.started).toBe(true);
      expect(first.kafka.version).toMatch(/^3\.9\./);
      expect(first.dynamodb.version).toMatch(/^3\.3\./);
      const second = await upStack(opts);
      expect(second.kafka.started).toBe(false);
      expect(second.dynamodb.started).toBe(false);
      expect(second.kafka.pid).toBe(first.kafka.pid);
      await second.stop(); // stops nothing it did not start
      expect(isAlive(first.kafka.pid)).toBe(true);
    } finally {
      await first.stop();
    }
    expect(isAlive(first.kafka.pid)).toBe(false);
    expect(isAlive(first.dynamodb.pid)).toBe(false);
  }, 120_000);

  it('missing java or mvn is one clear line', () => {
    const saved = process.env.PATH;
    process.env.PATH = tmp; // nothing there
    try {
      expect(() => ensureJars('kafka', path.join(tmp, 'nojars'), () => undefined)).toThrow(
        /^java is not available .*install it/,
      );
    } finally {
      process.env.PATH = saved;
    }
  });
});
