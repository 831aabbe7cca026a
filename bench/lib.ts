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
  const s = await upStack({ mode: 'ephemeral', log: (m) => console.error(`[stack] ${m}`) });
  // A benchmark that dies half-way must not leave its JVMs behind.
  process.on('exit', () => s.killSync());
  console.log(`Kafka ${s.kafka.version}, DynamoDB Local ${s.dynamodb.version}`);
  return s;
}
