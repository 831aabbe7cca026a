import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../infra/local/proc.js';
import { ConfigError, loadConfig } from '../shared/config.js';
import { createLogger } from '../shared/logger.js';
import { resolveInfra } from './process.js';

const home = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-process-'));
const saved = { ...process.env };
afterAll(() => {
  process.env = saved;
  fs.rmSync(home, { recursive: true, force: true });
});

describe('resolveInfra', () => {
  it('refuses to start the embedded stack for a production config that skipped loadConfig', async () => {
    // Were the stack started, it would live in a folder and on ports of this test's own.
    process.env.SVC_HOME = home;
    process.env.SVC_KAFKA_PORT = String(await freePort());
    process.env.SVC_KAFKA_CONTROLLER_PORT = String(await freePort());
    process.env.SVC_DYNAMODB_PORT = String(await freePort());
    const config = { ...loadConfig({}), NODE_ENV: 'production' };
    const r: unknown = await resolveInfra(config, createLogger({ level: 'silent' })).then(
      // Started after all: stop it before failing.
      async (infra) => {
        await infra.stack?.stop();
        return infra;
      },
      (e: unknown) => e,
    );
    expect(r).toBeInstanceOf(ConfigError);
    expect((r as Error).message).toMatch(/NODE_ENV=production.*KAFKA_BROKERS/);
    expect((r as Error).message).not.toContain('\n');
    expect(fs.existsSync(path.join(home, 'run'))).toBe(false);
  });
});
