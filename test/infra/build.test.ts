import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { projectRoot } from '../../infra/local/paths.js';
import { freePort } from '../../infra/local/proc.js';

/**
 * The production build (`npm run build`): transpiled into a folder of the project, then its
 * production entry (`bin/serve.js`, what `npm run start:prod` runs) is run with plain `node`
 * (no tsx) against the test stack, as production runs it. It must start, serve the files it
 * reads at run time (widget script, portal assets) and write to DynamoDB; given no Kafka and
 * DynamoDB it must stop at once with one line.
 */

const out = path.join(projectRoot, 'test-results', `build-${randomBytes(3).toString('hex')}`);
const admin = `build-admin-${randomBytes(12).toString('hex')}`;
let child: ChildProcess | undefined;
let base = '';
let log = '';

beforeAll(async () => {
  const built = spawnSync(
    process.execPath,
    ['--import', 'tsx', path.join(projectRoot, 'bin', 'build.ts'), `--outdir=${out}`],
    { cwd: projectRoot, encoding: 'utf8' },
  );
  expect(built.status, built.stderr).toBe(0);
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  const id = randomBytes(3).toString('hex');
  child = spawn(process.execPath, [path.join(out, 'bin', 'serve.js')], {
    cwd: projectRoot,
    env: {
      PATH: process.env.PATH,
      NODE_ENV: 'development',
      LOG_LEVEL: 'warn',
      PORT: String(port),
      KAFKA_BROKERS: inject('kafkaBrokers'),
      DYNAMODB_ENDPOINT: inject('dynamoEndpoint'),
      TOPIC_PREFIX: `t.build${id}.`,
      TABLE_PREFIX: `t_build${id}_`,
      SVC_ADMIN_TOKEN: admin,
      SVC_ENCRYPTION_KEY: Buffer.alloc(32, 9).toString('base64'),
      SVC_HOME: path.join(out, '.home'),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (c: Buffer) => (log += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (log += c.toString()));
  const until = Date.now() + 90_000;
  while (!log.includes(' ready at http')) {
    if (child.exitCode !== null) throw new Error(`dist/bin/serve.js exited: ${log}`);
    if (Date.now() > until) throw new Error(`dist/bin/serve.js did not start: ${log}`);
    await delay(200);
  }
}, 120_000);

afterAll(async () => {
  if (child && child.exitCode === null) {
    const exited = new Promise((r) => child!.once('exit', r));
    child.kill('SIGTERM');
    await Promise.race([exited, delay(15_000)]);
    if (child.exitCode === null) child.kill('SIGKILL');
  }
  fs.rmSync(out, { recursive: true, force: true });
});

describe('npm run build, then node dist/bin/serve.js', () => {
  it('transpiled every module, with no TypeScript left to run', () => {
    expect(fs.existsSync(path.join(out, 'bin', 'serve.js'))).toBe(true);
    expect(fs.existsSync(path.join(out, 'shared', 'runtime.js'))).toBe(true);
    expect(fs.existsSync(path.join(out, 'shared', 'runtime.test.js'))).toBe(false);
  });

  it('is ready, serves the widget script and the portal assets, and writes to DynamoDB', async () => {
    const ready = await fetch(`${base}/readyz`);
    expect(ready.status).toBe(200);
    const widget = await fetch(`${base}/svc-consent.v1.js`);
    expect(widget.status).toBe(200);
    expect(await widget.text()).toContain('svc-consent.v1.js');
    const portal = await fetch(`${base}/portal/assets/portal.js`);
    expect(portal.status).toBe(200);
    expect(portal.headers.get('content-type')).toMatch(/javascript/);
    const created = await fetch(`${base}/api/v1/admin/apps`, {
      method: 'POST',
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'Built',
        environment: 'sandbox',
        webhookUrl: 'http://127.0.0.1:9/hook',
        allowedOrigins: ['https://shop.example'],
        contactEmail: 'dpo@shop.example',
      }),
    });
    expect(created.status, await created.clone().text()).toBe(201);
  });

  it('refuses to start with no Kafka and DynamoDB configured, in one line, starting nothing', () => {
    const home = path.join(out, '.home-unset');
    const r = spawnSync(process.execPath, [path.join(out, 'bin', 'serve.js')], {
      cwd: projectRoot,
      env: { PATH: process.env.PATH, SVC_HOME: home },
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(
      /^error: KAFKA_BROKERS and AWS_REGION \(or DYNAMODB_ENDPOINT\) must be set; [^\n]*\n$/,
    );
    expect(fs.existsSync(home)).toBe(false);
  });
});
