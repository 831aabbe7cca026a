import http, { Agent, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { loadConfig } from '../shared/config.js';
import { createLogger } from '../shared/logger.js';
import { startProcess, type RunningProcess } from '../bin/process.js';
import { createApp } from '../shared/domain/apps.js';
import type { ConsentEvent } from '../shared/domain/consent/events.js';
import { newEventId, newReferenceId } from '../shared/domain/ids.js';
import type { App } from '../shared/domain/types.js';
import { dispatcherWorker } from '../workers/dispatcher/index.js';
import { benchStack, kafkaFloor, percentile } from './lib.js';
import { BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
import { firstAttemptRecord } from '../shared/storage/ledger/attempts.js';
import { newDispatchState } from '../shared/storage/ledger/dispatches.js';
import type { BenchOutcome } from './record.js';

const N_THROUGHPUT = Number(process.env.BENCH_DISPATCH_EVENTS ?? 4000);
const RATE = Number(process.env.BENCH_DISPATCH_RATE ?? 1000);
const RATE_SECONDS = Number(process.env.BENCH_DISPATCH_SECONDS ?? 2);
const DRAIN_S = Number(process.env.BENCH_DISPATCH_DRAIN_SECONDS ?? 90);
/** A rate the dispatcher sustains here (its measured capacity is higher). */
const MID_RATE = Number(process.env.BENCH_DISPATCH_MID_RATE ?? 300);
/** A rate under the dispatcher's capacity on DynamoDB Local, where latency is not queueing. */
const LOW_RATE = Number(process.env.BENCH_DISPATCH_LOW_RATE ?? 20);
const LOW_SECONDS = Number(process.env.BENCH_DISPATCH_LOW_SECONDS ?? 10);
/** DynamoDB Local runs several times faster once its JIT is warm: an unmeasured burst first. */
const WARMUP_EVENTS = Number(process.env.BENCH_DISPATCH_WARMUP_EVENTS ?? 600);
const SETTINGS = {
  events: N_THROUGHPUT,
  rate: RATE,
  rateSeconds: RATE_SECONDS,
  midRate: MID_RATE,
  lowRate: LOW_RATE,
  lowSeconds: LOW_SECONDS,
  warmupEvents: WARMUP_EVENTS,
};

/**
 * A loopback receiver recording, per path, when each webhook first arrived (and its
 * createdAt); a repeated webhook-id is counted as a retry (another attempt number) or a
 * duplicate send (the same attempt again), not as another arrival.
 */
async function receiver(hangPath?: string) {
  const arrivals: { path: string; createdAt: number; at: number }[] = [];
  const attemptsById = new Map<string, Set<string>>();
  const counts = { retries: 0, duplicates: 0 };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url === hangPath) return; // never answers: the dispatcher times out
      const at = Date.now();
      res.end('{"ok":true}');
      const id = req.headers['webhook-id'];
      if (typeof id === 'string') {
        const attempt = String(req.headers['x-svc-attempt']);
        const seen = attemptsById.get(id);
        if (seen) {
          if (seen.has(attempt)) counts.duplicates++;
          else counts.retries++;
          seen.add(attempt);
          return;
        }
        attemptsById.set(id, new Set([attempt]));
      }
      const body = Buffer.concat(chunks).toString();
      const createdAt = body.startsWith('{')
        ? Date.parse((JSON.parse(body) as { createdAt: string }).createdAt)
        : at;
      arrivals.push({ path: req.url ?? '/', createdAt, at });
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    base,
    arrivals,
    counts,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

function event(app: App): ConsentEvent {
  return {
    id: newEventId(),
    type: 'consent.granted',
    apiVersion: 'v1',
    createdAt: new Date().toISOString(),
    appId: app.appId,
    environment: app.environment,
    data: {
      referenceId: newReferenceId(),
      userId: null,
      consentId: randomUUID(),
      sequence: 1,
      recordIds: [randomUUID()],
      purposes: { marketing: true },
      state: { marketing: 'granted' },
      noticeId: null,
      noticeVersion: null,
      expiresAt: null,
    },
  };
}

async function publish(p: RunningProcess, events: ConsentEvent[]) {
  for (let i = 0; i < events.length; i += 500) {
    await p.rt.producer.send(
      events.slice(i, i + 500).map((e) => ({
        topic: p.rt.topics.consentEvents,
        key: `${e.appId}:${e.data.referenceId}`,
        value: JSON.stringify(e),
      })),
    );
  }
}

async function waitFor(cond: () => boolean, seconds: number) {
  const end = Date.now() + seconds * 1000;
  while (!cond() && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
  return cond();
}

/** Publishes at `rate` events/s for `seconds`, spread over `apps`; returns e2e latencies of healthy paths. */
async function paced(
  p: RunningProcess,
  apps: App[],
  recv: Awaited<ReturnType<typeof receiver>>,
  rate: number,
  seconds: number,
) {
  const start = recv.arrivals.length;
  const total = rate * seconds;
  const tickMs = 20;
  const perTick = Math.max(1, Math.round((rate * tickMs) / 1000));
  let sent = 0;
  const t0 = Date.now();
  while (sent < total) {
    const batch = Array.from({ length: Math.min(perTick, total - sent) }, (_, i) =>
      event(apps[(sent + i) % apps.length]!),
    );
    await publish(p, batch);
    sent += batch.length;
    const next = t0 + (sent / rate) * 1000;
    const wait = next - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  }
  const healthy = apps.length - (apps.some((a) => a.webhookUrl.endsWith('/hang')) ? 1 : 0);
  const expected = Math.round((total * healthy) / apps.length);
  await waitFor(() => recv.arrivals.length - start >= expected, DRAIN_S);
  const lat = recv.arrivals
    .slice(start)
    .map((a) => a.at - a.createdAt)
    .sort((a, b) => a - b);
  return {
    sent: total,
    delivered: lat.length,
    expected,
    p50: percentile(lat, 50),
    p99: percentile(lat, 99),
  };
}

/** Kafka's floor under ours for 2 s at `rate`/s, through the process's own producer. */
const floorOf = (p: RunningProcess, rate: number) =>
  kafkaFloor({
    kafka: p.rt.kafka,
    topicPrefix: p.rt.config.TOPIC_PREFIX,
    rate,
    seconds: 2,
    perTick: Math.max(1, Math.round(rate / 50)),
    send: (messages) => p.rt.producer.send(messages),
  });

async function ledgerCeiling(p: RunningProcess, app: App): Promise<number> {
  // The item the dispatcher writes for a first delivery that succeeded: built by the same
  // function (firstAttemptRecord), so the ceiling is measured on items of the same size.
  const item = () => {
    const e = event(app);
    const nowMs = Date.now();
    const state = newDispatchState({
      event: e,
      body: JSON.stringify(e),
      endpoint: `${app.appId}:webhook`,
      nowMs,
    });
    const rec = firstAttemptRecord(p.rt, {
      state,
      nowMs,
      deliveryStatus: 'delivered',
      entry: {
        trigger: 'first',
        time: new Date(nowMs).toISOString(),
        durationMs: 3,
        destination: 'http://127.0.0.1:9999/hook',
        statusCode: 200,
        responseExcerpt: '{"ok":true}',
        outcome: 'delivered',
      },
    });
    if (rec.children.length > 0)
      throw new Error('a first delivery without a postback writes one item');
    return rec.head;
  };
  let n = 0;
  const end = Date.now() + 4_000;
  await Promise.all(
    [0, 1].map(async () => {
      while (Date.now() < end) {
        await p.rt.dynamo.doc.send(
          new BatchWriteCommand({
            RequestItems: {
              [p.rt.tables.ledger]: Array.from({ length: 25 }, () => ({
                PutRequest: { Item: item() },
              })),
            },
          }),
        );
        n += 25;
      }
    }),
  );
  return n / 4;
}

async function rawBaseline(url: string, n: number, concurrency: number) {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const body = JSON.stringify(event({ appId: 'app_x', environment: 'sandbox' } as App));
  let next = 0;
  const t0 = Date.now();
  const one = () =>
    new Promise<void>((resolve, reject) => {
      const req = request(
        url,
        { method: 'POST', agent, headers: { 'content-type': 'application/json' } },
        (res) => {
          res.resume();
          res.on('end', () => resolve());
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next++ < n) await one();
    }),
  );
  agent.destroy();
  return n / ((Date.now() - t0) / 1000);
}

/** A process running the dispatcher alone on the bench's stack, delivering to loopback. */
export function startBenchDispatcher(
  stack: { kafkaBrokers: string; dynamoEndpoint: string },
  name: string,
): Promise<RunningProcess> {
  const config = loadConfig(
    {
      // Other settings may be given in the environment.
      ...process.env,
      LOG_LEVEL: 'silent',
      KAFKA_BROKERS: stack.kafkaBrokers,
      DYNAMODB_ENDPOINT: stack.dynamoEndpoint,
      PORT: '0',
      WEBHOOK_TIMEOUT_MS: '2000',
      // The receivers listen on loopback (a stack of the bench's own is not the embedded default).
      WEBHOOK_ALLOW_LOOPBACK_SANDBOX: 'true',
    },
    { DISPATCH_SAFETY_NET_MS: 10_000 },
  );
  return startProcess({
    name,
    services: [],
    workers: [dispatcherWorker],
    config,
    log: createLogger({ level: 'silent' }),
  });
}

/**
 * Issue 4's dispatch benchmark: signed, ledgered deliveries per second vs. a plain Node
 * client's loopback POST rate; end-to-end latency at a fixed event rate; and the effect of
 * one hanging endpoint among 20 on the others.
 */
export async function run(): Promise<BenchOutcome> {
  const stack = await benchStack();
  const recv = await receiver('/hang');
  const startedAt = Date.now();
  const p = await startBenchDispatcher(stack, 'bench-dispatch');
  try {
    const mk = async (path: string) =>
      (
        await createApp(p.rt, {
          name: `bench ${path}`,
          environment: 'sandbox',
          webhookUrl: `${recv.base}${path}`,
          allowedOrigins: ['http://localhost:3000'],
          contactEmail: 'ops@example.com',
        })
      ).app;
    const apps = await Promise.all(Array.from({ length: 20 }, (_, i) => mk(`/ep${i}`)));

    // DynamoDB Local runs several times faster once its JIT is warm: an unmeasured burst first.
    const warmStart = recv.arrivals.length;
    await publish(
      p,
      Array.from({ length: WARMUP_EVENTS }, (_, i) => event(apps[i % apps.length]!)),
    );
    await waitFor(() => recv.arrivals.length - warmStart >= WARMUP_EVENTS, DRAIN_S);

    // Steady state: in its first minute on a partition the dispatcher looks every event up in
    // the ledger (it cannot yet tell fresh events from ones a previous owner handled).
    const steady = startedAt + 62_000 - Date.now();
    if (steady > 0) await new Promise((r) => setTimeout(r, steady));

    // DynamoDB requests the dispatcher makes, by command (printed per delivery).
    const requests = new Map<string, { n: number; ms: number }>();
    p.rt.dynamo.doc.middlewareStack.add(
      (next, context) => async (args) => {
        const t = performance.now();
        try {
          return await next(args);
        } finally {
          const r = requests.get(context.commandName ?? '?') ?? { n: 0, ms: 0 };
          r.n++;
          r.ms += performance.now() - t;
          requests.set(context.commandName ?? '?', r);
        }
      },
      { step: 'initialize', name: 'benchCount' },
    );

    // 1. Throughput: a burst of events, delivered as fast as the dispatcher can.
    const baseline = await rawBaseline(`${recv.base}/baseline`, N_THROUGHPUT, 64);
    const before = recv.arrivals.filter((a) => a.path !== '/baseline').length;
    const burst = Array.from({ length: N_THROUGHPUT }, (_, i) => event(apps[i % apps.length]!));
    const t0 = Date.now();
    const cpu0 = process.cpuUsage();
    await publish(p, burst);
    const done = await waitFor(
      () => recv.arrivals.filter((a) => a.path !== '/baseline').length - before >= N_THROUGHPUT,
      DRAIN_S * 2,
    );
    const delivered = recv.arrivals.filter((a) => a.path !== '/baseline').length - before;
    const rate = delivered / ((Date.now() - t0) / 1000);
    const cpu = process.cpuUsage(cpu0);
    const cpuUs = (cpu.user + cpu.system) / delivered;
    console.log(
      `throughput  plain Node client loopback POST:   ${baseline.toFixed(0).padStart(6)} req/s`,
    );
    console.log(
      `throughput  signed + ledgered deliveries:      ${rate.toFixed(0).padStart(6)} deliveries/s (${delivered}/${N_THROUGHPUT}${done ? '' : ', drain timed out'})`,
    );
    console.log(
      `throughput  ratio:                             ${(rate / baseline).toFixed(3)}  (target ≥ 0.5)`,
    );
    console.log(
      `            receiver saw ${recv.counts.retries} retries and ${recv.counts.duplicates} duplicate sends so far`,
    );
    for (const [name, r] of requests)
      console.log(
        `            DynamoDB ${name}: ${(r.n / delivered).toFixed(3)} per delivery, mean ${(r.ms / r.n).toFixed(1)} ms`,
      );

    // The ledger's own ceiling here: DynamoDB Local taking dispatch items (as the dispatcher
    // writes them: first attempt inside) by BatchWriteItem, 25 a request, nothing else running.
    const ceiling = await ledgerCeiling(p, apps[0]!);
    console.log(
      `ceiling     DynamoDB Local BatchWriteItem alone: ${ceiling.toFixed(0).padStart(6)} dispatch items/s (the dispatcher's own first-delivery item, 25 a request, 2 requests in flight, as the dispatcher)`,
    );
    console.log(
      `(a)         deliveries / same-run ceiling:      ${(rate / ceiling).toFixed(3)}  (target ≥ 0.7; one item per delivery on both sides)`,
    );
    console.log(
      `(b)         CPU per delivery of this process:  ${cpuUs.toFixed(0).padStart(6)} µs (process.cpuUsage over the burst; the dispatcher, and also the publisher and the receiver, which run here; target ≤ 300 µs for the dispatcher)`,
    );

    const floor = await floorOf(p, MID_RATE);
    console.log(
      `floor       Kafka alone, produce → consume at ${MID_RATE}/s: p50 ${floor.p50} ms, p99 ${floor.p99} ms`,
    );
    const floorHigh = await floorOf(p, RATE);
    console.log(
      `floor       Kafka alone, produce → consume at ${RATE}/s: p50 ${floorHigh.p50} ms, p99 ${floorHigh.p99} ms`,
    );

    // 2. End-to-end latency at the target rate (above capacity here: mostly queueing).
    const fast = await paced(p, apps, recv, RATE, RATE_SECONDS);
    console.log(
      `(c)         ${RATE}/s for ${RATE_SECONDS} s, 20 healthy endpoints: p50 ${fast.p50} ms, p99 ${fast.p99} ms  (${fast.delivered}/${fast.expected} delivered; p50 ${fast.p50 - floorHigh.p50} ms above Kafka's floor, target ≤ 3)`,
    );

    // 2b. A rate this machine's dispatcher sustains (under its measured capacity).
    const mid = await paced(p, apps, recv, MID_RATE, RATE_SECONDS * 2);
    console.log(
      `(c)         ${MID_RATE}/s for ${RATE_SECONDS * 2} s, 20 healthy endpoints: p50 ${mid.p50} ms, p99 ${mid.p99} ms  (${mid.delivered}/${mid.expected} delivered; p50 ${mid.p50 - floor.p50} ms above Kafka's floor, target ≤ 3)`,
    );

    // 3. Below capacity: latency, then the same with one of the 20 endpoints hanging.
    const healthy = await paced(p, apps, recv, LOW_RATE, LOW_SECONDS);
    console.log(
      `latency     ${LOW_RATE}/s for ${LOW_SECONDS} s, 20 healthy endpoints: p50 ${healthy.p50} ms, p99 ${healthy.p99} ms  (${healthy.delivered}/${healthy.expected} delivered)`,
    );
    const hang = await mk('/hang');
    const withHang = await paced(p, [...apps.slice(0, 19), hang], recv, LOW_RATE, LOW_SECONDS);
    console.log(
      `isolation   ${LOW_RATE}/s, 1 of 20 hanging: healthy p50 ${withHang.p50} ms, p99 ${withHang.p99} ms  (${withHang.delivered}/${withHang.expected} delivered)`,
    );
    console.log(
      `isolation   healthy p99 ratio hanging/all-healthy: ${(withHang.p99 / healthy.p99).toFixed(2)}  (target ≤ 1.2)`,
    );
    console.log(
      `            receiver saw ${recv.counts.retries} retries and ${recv.counts.duplicates} duplicate sends in all`,
    );
    const counters: { name: string; labels: object; value: number }[] = [];
    for (const name of [
      'svc_webhook_deliveries_total',
      'svc_webhook_attempts_deferred_total',
      'svc_webhook_ledger_writes_total',
    ])
      for (const v of (await p.rt.registry.getSingleMetric(name)?.get())?.values ?? []) {
        console.log(`            ${name}${JSON.stringify(v.labels)} ${v.value}`);
        counters.push({ name, labels: v.labels, value: v.value });
      }
    return {
      figures: {
        throughput: { deliveriesPerS: rate, delivered, events: N_THROUGHPUT, drained: done },
        ratioToPlainPost: rate / baseline,
        ratioToCeiling: rate / ceiling,
        cpuUsPerDelivery: cpuUs,
        dynamodbPerDelivery: Object.fromEntries(
          [...requests].map(([k, r]) => [k, { perDelivery: r.n / delivered, meanMs: r.ms / r.n }]),
        ),
        latency: [
          { rate: RATE, seconds: RATE_SECONDS, endpoints: 20, hanging: 0, ...fast },
          { rate: MID_RATE, seconds: RATE_SECONDS * 2, endpoints: 20, hanging: 0, ...mid },
          { rate: LOW_RATE, seconds: LOW_SECONDS, endpoints: 20, hanging: 0, ...healthy },
          { rate: LOW_RATE, seconds: LOW_SECONDS, endpoints: 20, hanging: 1, ...withHang },
        ],
        isolationP99Ratio: withHang.p99 / healthy.p99,
        receiver: { ...recv.counts },
        counters,
        targets: { ratioToPlainPost: 0.5, ratioToCeiling: 0.7, cpuUsPerDelivery: 300 },
      },
      baseline: {
        plainPostPerS: baseline,
        ledgerCeilingItemsPerS: ceiling,
        kafkaFloor: [
          { rate: MID_RATE, ...floor },
          { rate: RATE, ...floorHigh },
        ],
      },
      settings: SETTINGS,
    };
  } finally {
    await p.close();
    await recv.close();
    await stack.stop();
  }
}
