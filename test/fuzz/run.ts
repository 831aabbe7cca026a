import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { freePort } from '../../infra/local/proc.js';
import { upStack, type StackHandle } from '../../infra/local/stack.js';
import { spawnEnv } from '../helpers/tuning.js';
import { formatReport, fuzz } from './engine.js';
import { probeRequests } from './probes.js';
import { fuzzEnv, newAdminToken, prepare, startReceiver } from './session.js';

/**
 * `npm run fuzz -- [--requests=10000] [--seed=N] [--concurrency=8] [--only=i,j] [--trace]`
 * Starts a throw-away stack (Kafka + DynamoDB Local; or the one named by TEST_KAFKA_BROKERS and
 * TEST_DYNAMODB_ENDPOINT), runs the service as a child process (`bin/start.ts`, every service
 * and worker), fuzzes every route of its /openapi.json, prints the counts and each failure
 * with its seed and a curl command, and exits 1 when anything failed. The service's log
 * (errors only), the failing requests in full and, with --trace, every request and the start
 * of its answer are kept in test-results/fuzz/.
 */

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    requests: { type: 'string', default: '10000' },
    seed: { type: 'string' },
    concurrency: { type: 'string', default: '8' },
    only: { type: 'string' },
    'replenish-every': { type: 'string', default: '250' },
    trace: { type: 'boolean', default: false },
  },
  strict: true,
});

const root = path.resolve(import.meta.dirname, '../..');
const outDir = path.join(root, 'test-results', 'fuzz');
const seed = values.seed === undefined ? randomInt(2 ** 31) : Number(values.seed);
const requests = Number(values.requests);
const concurrency = Number(values.concurrency);
const only = values.only?.split(',').map(Number);
if (
  ![seed, requests, concurrency].every(Number.isInteger) ||
  (only && !only.every(Number.isInteger))
) {
  process.stderr.write(
    'usage: npm run fuzz -- [--requests=N] [--seed=N] [--concurrency=N] [--only=i,j]\n',
  );
  process.exit(2);
}

const log = (m: string) => process.stdout.write(`${new Date().toISOString().slice(11, 19)} ${m}\n`);
log(`seed ${seed} (repeat with --seed=${seed})`);

let stack: StackHandle | undefined;
let child: ChildProcess | undefined;
let exitCode = 1;
/** The child's SVC_HOME (its development keys and e-mails), removed afterwards. */
let home: string | undefined;
const receiver = await startReceiver();
try {
  let brokers = process.env.TEST_KAFKA_BROKERS;
  let endpoint = process.env.TEST_DYNAMODB_ENDPOINT;
  if (!brokers || !endpoint) {
    // Its JVMs stop with this process however it ends (infra/local/proc.ts, spawnJava).
    stack = await upStack({ mode: 'ephemeral', readyTimeoutMs: 180_000, log });
    brokers = stack.kafkaBrokers;
    endpoint = stack.dynamoEndpoint;
  }
  const adminToken = newAdminToken();
  const port = await freePort();
  const id = randomBytes(3).toString('hex');
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-fuzz-'));
  fs.mkdirSync(outDir, { recursive: true });
  const logFile = path.join(outDir, `service-seed-${seed}.log`);
  const out = fs.openSync(logFile, 'w');
  child = spawn(
    process.execPath,
    ['--import', 'tsx', 'test/helpers/start-tuned.ts', '--role=all'],
    {
      cwd: root,
      stdio: ['ignore', out, out],
      env: {
        ...process.env,
        ...spawnEnv({
          NODE_ENV: 'development',
          LOG_LEVEL: 'error',
          SVC_HOME: home,
          KAFKA_BROKERS: brokers,
          DYNAMODB_ENDPOINT: endpoint,
          HOST: '127.0.0.1',
          PORT: String(port),
          PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
          TOPIC_PREFIX: `fz.${id}.`,
          TABLE_PREFIX: `fz_${id}_`,
          KAFKA_CLIENT_ID: `fuzz-${id}`,
          SVC_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
          SVC_SIGNING_KEY: randomBytes(32).toString('hex'),
          ...fuzzEnv(adminToken),
        }),
      },
    },
  );
  let exited: string | undefined;
  child.once('exit', (code, signal) => (exited = `exited (${signal ?? code})`));
  const baseUrl = `http://127.0.0.1:${port}`;
  const until = Date.now() + 240_000;
  for (;;) {
    if (exited) throw new Error(`the service ${exited} before it was ready; see ${logFile}`);
    const ok = await fetch(`${baseUrl}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (Date.now() > until)
      throw new Error(`the service was not ready within 240 s; see ${logFile}`);
    await new Promise((r) => setTimeout(r, 500));
  }
  log(`service at ${baseUrl} (log: ${path.relative(root, logFile)})`);
  const { world, routes } = await prepare({
    baseUrl,
    adminToken,
    receiverUrl: receiver.url,
    dispatchWaitMs: 90_000,
    log,
  });
  const report = await fuzz(baseUrl, world, routes, {
    seed,
    requests,
    concurrency,
    replenishEvery: Number(values['replenish-every']),
    timeoutMs: 60_000,
    ...(only ? { only } : { probes: probeRequests(world, routes) }),
    log,
    outDir,
    ...(values.trace ? { traceFile: path.join(outDir, `trace-seed-${seed}.jsonl`) } : {}),
  });
  if (exited) report.crashed = true;
  process.stdout.write(`\n${formatReport(report, baseUrl)}\n`);
  if (report.failures.length > 0)
    process.stdout.write(
      `  full failing requests: ${path.relative(root, outDir)}/failures-seed-${seed}.json\n`,
    );
  exitCode = report.failures.length === 0 && !report.crashed ? 0 : 1;
} catch (err) {
  process.stderr.write(`fuzz: ${(err as Error).message}\n`);
} finally {
  if (child && child.exitCode === null) {
    const c = child;
    const gone = new Promise((r) => c.once('exit', r));
    c.kill('SIGTERM');
    const timer = setTimeout(() => c.kill('SIGKILL'), 30_000);
    await gone;
    clearTimeout(timer);
  }
  await receiver.close();
  await stack?.stop();
  if (home) fs.rmSync(home, { recursive: true, force: true });
}
process.exit(exitCode);
