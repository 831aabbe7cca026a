import { BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
import { loadConfig } from '../shared/config.js';
import { createLogger } from '../shared/logger.js';
import { timerKey, type TimerEntry } from '../shared/storage/timers/due.js';
import { applyDefinitions, createRuntime } from '../bin/compose.js';
import type { Runtime } from '../shared/runtime.js';
import { FamilySweeper } from '../workers/timers/sweep.js';
import { benchStack, percentile } from './lib.js';
import type { BenchOutcome } from './record.js';

const SHARDS = 8;
const DUE = Number(process.env.BENCH_TIMERS_DUE ?? 100);
const SMALL = Number(process.env.BENCH_TIMERS_SMALL ?? 1_000);
const LARGE = Number(process.env.BENCH_TIMERS_LARGE ?? 200_000);
const REPEAT = 5;

async function writeAll(rt: Runtime, entries: TimerEntry[], label: string) {
  const t0 = Date.now();
  let next = 0;
  let done = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < entries.length) {
        const chunk = entries.slice(next, next + 25);
        next += 25;
        let items = chunk.map((e) => ({ PutRequest: { Item: { ...e } } }));
        while (items.length > 0) {
          const r = await rt.dynamo.doc.send(
            new BatchWriteCommand({ RequestItems: { [rt.tables.timers]: items } }),
          );
          items = (r.UnprocessedItems?.[rt.tables.timers] ?? []) as typeof items;
        }
        done += chunk.length;
        if (done % 20_000 < 25)
          console.error(`[timers] ${label}: ${done}/${entries.length} written`);
      }
    }),
  );
  return (Date.now() - t0) / 1000;
}

/** Future (not due) entries spread over the next 30 days, one minute bucket after another. */
function future(n: number, offset: number, nowMs: number): TimerEntry[] {
  return Array.from({ length: n }, (_, i) => ({
    ...timerKey(
      'expiry',
      `future-${offset + i}`,
      nowMs + 120_000 + ((offset + i) % 43_200) * 60_000,
      SHARDS,
    ),
    kind: 'bench',
  }));
}

function due(round: string, nowMs: number): TimerEntry[] {
  return Array.from({ length: DUE }, (_, i) => ({
    ...timerKey('expiry', `due-${round}-${i}`, nowMs - 1_000, SHARDS),
    kind: 'bench',
  }));
}

/** Median time of one sweep that fires DUE entries, over REPEAT rounds. */
async function sweepTimes(rt: Runtime, label: string): Promise<number[]> {
  const times: number[] = [];
  for (let r = 0; r < REPEAT; r++) {
    const now = Date.now();
    await writeAll(rt, due(`${label}-${r}`, now), 'due');
    let fired = 0;
    const s = new FamilySweeper(rt, {
      family: 'expiry',
      shards: SHARDS,
      intervalMs: 60_000,
      leaseMs: 30_000,
      now: () => Date.now(),
      log: rt.log,
      act: async () => {
        fired++;
      },
    });
    await s.init();
    const t0 = process.hrtime.bigint();
    await s.sweep();
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    if (fired !== DUE) throw new Error(`sweep fired ${fired} of ${DUE} due entries`);
  }
  return times.sort((a, b) => a - b);
}

/**
 * Issue 5's timers benchmark: the time of one sweep (firing DUE due entries) with SMALL and
 * then LARGE not-due entries stored in the same due-index. A sweep reads only due buckets, so
 * the two should match.
 */
export async function run(): Promise<BenchOutcome> {
  const stack = await benchStack();
  const config = loadConfig({
    LOG_LEVEL: 'silent',
    KAFKA_BROKERS: stack.kafkaBrokers,
    DYNAMODB_ENDPOINT: stack.dynamoEndpoint,
    TABLE_PREFIX: 'bench_timers_',
    TOPIC_PREFIX: 'bench.timers.',
  });
  const rt = createRuntime(config, createLogger({ level: 'silent' }));
  try {
    await applyDefinitions(rt);
    const now = Date.now();
    await writeAll(rt, future(SMALL, 0, now), 'stored');
    const small = await sweepTimes(rt, 'small');
    const secs = await writeAll(rt, future(LARGE - SMALL, SMALL, now), 'stored');
    console.log(`wrote ${LARGE - SMALL} more not-due timers in ${secs.toFixed(0)} s`);
    const large = await sweepTimes(rt, 'large');
    const med = (xs: number[]) => percentile(xs, 50);
    console.log(
      `sweep firing ${DUE} due timers, ${SMALL} stored:   median ${med(small).toFixed(1)} ms  (runs: ${small.map((x) => x.toFixed(0)).join(', ')})`,
    );
    console.log(
      `sweep firing ${DUE} due timers, ${LARGE} stored: median ${med(large).toFixed(1)} ms  (runs: ${large.map((x) => x.toFixed(0)).join(', ')})`,
    );
    console.log(`ratio large/small: ${(med(large) / med(small)).toFixed(2)}  (target ≤ 1.2)`);
    return {
      figures: {
        large: { stored: LARGE, medianMs: med(large), runsMs: large },
        ratio: med(large) / med(small),
        target: 1.2,
      },
      baseline: { small: { stored: SMALL, medianMs: med(small), runsMs: small } },
      settings: { due: DUE, small: SMALL, large: LARGE, repeat: REPEAT, shards: SHARDS },
    };
  } finally {
    await rt.close();
    await stack.stop();
  }
}
