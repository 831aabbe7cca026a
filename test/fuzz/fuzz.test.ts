import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allServices } from '../../bin/modules.js';
import type { RunningProcess } from '../../bin/process.js';
import { dispatcherWorker } from '../../workers/dispatcher/index.js';
import { relayWorker } from '../../workers/relay/index.js';
import { testProcess } from '../helpers/stack.js';
import { formatReport, fuzz, type FuzzReport } from './engine.js';
import { probeRequests } from './probes.js';
import { fuzzEnv, newAdminToken, prepare, startReceiver } from './session.js';

/**
 * The short fuzz run (`npm run fuzz` is the long one): every service of `npm start` with the
 * relay and dispatcher workers on the shared real stack, two tenants with data, the fixed
 * probes, then 1,000 generated requests from a fixed seed. Any 5xx, non-problem error, leak,
 * foreign id accepted, auth bypass or crash fails the test with the seed and the requests.
 */

const SEED = 20_260_611;
const REQUESTS = 1_000;

let p: RunningProcess;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let report: FuzzReport;
let routeCount = 0;

const outDir = path.resolve(import.meta.dirname, '../../test-results/fuzz');

beforeAll(async () => {
  const t0 = Date.now();
  receiver = await startReceiver();
  const adminToken = newAdminToken();
  p = await testProcess('fuzz', allServices, [relayWorker, dispatcherWorker], fuzzEnv(adminToken));
  const t1 = Date.now();
  const { world, routes } = await prepare({
    baseUrl: p.url,
    adminToken,
    receiverUrl: receiver.url,
    dispatchWaitMs: 20_000,
    log: () => undefined,
  });
  routeCount = routes.length;
  const t2 = Date.now();
  report = await fuzz(p.url, world, routes, {
    seed: SEED,
    requests: REQUESTS,
    concurrency: 8,
    replenishEvery: 250,
    timeoutMs: 30_000,
    probes: probeRequests(world, routes),
    log: () => undefined,
    outDir,
  });
  // The whole report, for reading after a failure (the assertion shows the first examples).
  fs.mkdirSync(outDir, { recursive: true });
  fs.writeFileSync(
    path.join(outDir, `vitest-seed-${SEED}.txt`),
    `${formatReport(report, p.url, 10)}\n  process start ${t1 - t0} ms, world ${t2 - t1} ms, run ${Date.now() - t2} ms\n`,
  );
}, 180_000);

afterAll(async () => {
  await p?.close();
  await receiver?.close();
});

describe('fuzz (short run, fixed seed)', () => {
  it('sends the probes and 1,000 generated requests over every route of /openapi.json', () => {
    expect(report.sent).toBeGreaterThanOrEqual(REQUESTS);
    // With about 50 routes, every one is drawn in 1,000 requests.
    expect(Object.keys(report.byRoute).length, formatReport(report, p.url)).toBe(routeCount);
    expect(report.byClass['2xx'] ?? 0).toBeGreaterThan(50);
  });

  it('gets no 5xx, no non-problem error, no leak, no foreign id, no auth bypass and no crash', () => {
    expect(report.crashed).toBe(false);
    const summary = report.failures.map(
      (f) => `${f.kind} #${f.index} ${f.route} → ${f.status ?? '-'}`,
    );
    expect(summary, formatReport(report, p.url, 2)).toEqual([]);
  });
});
