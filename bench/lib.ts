import fs from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import type { Kafka } from 'kafkajs';
import { upStack, type StackHandle } from '../infra/local/stack.js';

export interface RunResult {
  ops: number;
  seconds: number;
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

/**
 * Runs `op` from `concurrency` loops for `seconds` (after `warmupSeconds` not counted) and
 * reports throughput and latency. Bounded in time: stops by itself.
 */
export async function closedLoop(
  op: (i: number) => Promise<void>,
  o: { concurrency: number; seconds: number; warmupSeconds?: number },
): Promise<RunResult> {
  const latencies: number[] = [];
  let errors = 0;
  let counter = 0;
  const warmupEnd = Date.now() + (o.warmupSeconds ?? 1) * 1000;
  const end = warmupEnd + o.seconds * 1000;
  let firstError: unknown;
  const loop = async () => {
    while (Date.now() < end) {
      const i = counter++;
      const t0 = process.hrtime.bigint();
      try {
        await op(i);
        const now = Date.now();
        if (now >= warmupEnd && now < end)
          latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
      } catch (err) {
        errors++;
        firstError ??= err;
      }
    }
  };
  await Promise.all(Array.from({ length: o.concurrency }, loop));
  if (firstError) console.error('first error:', (firstError as Error).message ?? firstError);
  latencies.sort((a, b) => a - b);
  return {
    ops: latencies.length,
    seconds: o.seconds,
    perSecond: latencies.length / o.seconds,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    errors,
  };
}

export function fmt(r: RunResult): string {
  return `${r.perSecond.toFixed(0).padStart(6)} ops/s   p50 ${r.p50Ms.toFixed(2).padStart(6)} ms   p99 ${r.p99Ms
    .toFixed(2)
    .padStart(6)} ms   (${r.ops} ops, ${r.errors} errors)`;
}

/** The benchmark's own throw-away stack, like the tests'. */
export async function benchStack(): Promise<StackHandle> {
  // A benchmark that dies half-way leaves no JVM behind: they stop with this process.
  const s = await upStack({ mode: 'ephemeral', log: (m) => console.error(`[stack] ${m}`) });
  console.log(`Kafka ${s.kafka.version}, DynamoDB Local ${s.dynamodb.version}`);
  return s;
}

/** A message as the floor sends it: its value is the time it was sent. */
export interface FloorMessage {
  topic: string;
  key: string;
  value: string;
}

/**
 * Kafka's own produce → consume latency: `rate` messages a second for `seconds` to a new
 * scratch topic of 6 partitions (named from `topicPrefix`), each timed from just before its
 * send to its arrival at a kafkajs consumer in this process. `send` is the producer under test
 * (the bench decides whether it waits for each send); `perTick` messages go in each send.
 */
export async function kafkaFloor(o: {
  kafka: Kafka;
  topicPrefix: string;
  rate: number;
  seconds: number;
  send: (messages: FloorMessage[]) => Promise<unknown>;
  perTick?: number;
}): Promise<{ p50: number; p99: number; received: number; sent: number }> {
  const topic = `${o.topicPrefix}bench-floor-${Date.now().toString(36)}`;
  const admin = o.kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 6 }], waitForLeaders: true });
  await admin.disconnect();
  const lat: number[] = [];
  const consumer = o.kafka.consumer({ groupId: `${topic}-g`, maxWaitTimeInMs: 100 });
  let sent = 0;
  try {
    await consumer.connect();
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await consumer.run({
      partitionsConsumedConcurrently: 6,
      eachBatch: async ({ batch }) => {
        const now = Date.now();
        for (const m of batch.messages) lat.push(now - Number(m.value?.toString()));
      },
    });
    await delay(3_000); // joined and assigned
    const perTick = o.perTick ?? 1;
    const t0 = Date.now();
    while (sent < o.rate * o.seconds) {
      await o.send(
        Array.from({ length: perTick }, (_, i) => ({
          topic,
          key: `k${sent + i}`,
          value: String(Date.now()),
        })),
      );
      sent += perTick;
      const wait = t0 + (sent / o.rate) * 1000 - Date.now();
      if (wait > 0) await delay(wait);
    }
    for (const end = Date.now() + 10_000; lat.length < sent && Date.now() < end;) await delay(50);
  } finally {
    await consumer.disconnect();
  }
  lat.sort((a, b) => a - b);
  return { p50: percentile(lat, 50), p99: percentile(lat, 99), received: lat.length, sent };
}

/**
 * Runs `work` with the process's temporary folder (`os.tmpdir()`, where the stacks and the peer
 * keep their files) in a new folder on /dev/shm, where a sync to disk costs nothing; restores it
 * and removes the folder after. The folder is readable by other users: the peer's PostgreSQL
 * runs as its own user and must reach its folder inside.
 */
export async function onTmpfs<T>(work: (dir: string) => Promise<T>): Promise<T> {
  const dir = fs.mkdtempSync('/dev/shm/svc-bench-');
  fs.chmodSync(dir, 0o755);
  const before = process.env.TMPDIR;
  process.env.TMPDIR = dir;
  try {
    return await work(dir);
  } finally {
    if (before === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = before;
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
