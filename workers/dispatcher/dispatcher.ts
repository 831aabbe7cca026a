import { setMaxListeners } from 'node:events';
import { topicDefs } from '../../infra/definitions/topics.js';
import { runtimePipeline } from '../../shared/bus/pipeline.js';
import type { Runtime } from '../../shared/runtime.js';
import { WebhookClient } from '../../shared/webhooks/client.js';
import { parseCidrList } from '../../shared/net/ip.js';
import { ConfigError } from '../../shared/config.js';
import { Attempter, DEADLINE_MARGIN_MS, type AttemptJob } from './attempt.js';
import { CONSUMER, consentEventHandler } from './handler.js';
import { LANES, Lanes } from './lanes.js';
import { dispatcherMetrics } from './metrics.js';
import { PrincipalOrder } from './ordering.js';
import { getAppCached } from '../../shared/domain/apps.js';
import { retryShardLeases } from './shard-leases.js';
import { Sweeper } from './sweeper.js';
import { FirstAttemptWriter } from './writer.js';

/**
 * How long a first attempt's ledger record waits for others of its batch before a write that
 * is not full (25 records) starts: long enough that at low rates one listing names several
 * consents' dispatches. The webhook is sent before; only the record and the Kafka commit wait.
 */
const LEDGER_LINGER_MS = 250;

/**
 * A dispatcher process's fixed limits: ledger writes in flight, keep-alive sockets per
 * destination origin, attempts in flight (first, retries), queued first attempts before the
 * consumer waits, queued attempts per endpoint before they are left to the durable due-index,
 * and consent events a partition may run ahead of its committed offset.
 */
const LIMITS = {
  ledgerFlushes: 2,
  socketsPerOrigin: 64,
  firstInFlight: 512,
  retryInFlight: 128,
  retriesPerEndpoint: 2,
  backlog: 5_000,
  endpointBacklog: 500,
  uncommitted: 10_000,
} as const;

/**
 * The dispatcher's parts, wired: consumer → lanes → attempter → ledger, and the sweeper
 * feeding due retries into the retry lane.
 */
export async function startDispatcher(rt: Runtime): Promise<{ stop(): Promise<void> }> {
  const c = rt.config;
  if (c.DISPATCH_SAFETY_NET_MS <= c.WEBHOOK_TIMEOUT_MS + DEADLINE_MARGIN_MS)
    throw new ConfigError(
      `DISPATCH_SAFETY_NET_MS (${c.DISPATCH_SAFETY_NET_MS}) must exceed WEBHOOK_TIMEOUT_MS + ${DEADLINE_MARGIN_MS}`,
    );
  const log = rt.log.child({ worker: 'dispatcher' });
  const metrics = dispatcherMetrics(rt.registry);
  let allowlist;
  try {
    allowlist = parseCidrList(c.WEBHOOK_ALLOWLIST);
  } catch (err) {
    throw new ConfigError(`WEBHOOK_ALLOWLIST: ${(err as Error).message}`);
  }
  const guard = {
    allowlist,
    allowLoopbackSandbox: c.WEBHOOK_ALLOW_LOOPBACK_SANDBOX,
  };
  const client = new WebhookClient({
    maxSocketsPerDestination: LIMITS.socketsPerOrigin,
  });
  const abort = new AbortController();
  // Every running attempt listens on it (and stops listening when it ends).
  setMaxListeners(0, abort.signal);
  const writer = new FirstAttemptWriter(rt, {
    metrics,
    log,
    maxFlushes: LIMITS.ledgerFlushes,
    lingerMs: LEDGER_LINGER_MS,
  });
  const order = new PrincipalOrder({
    lanes: rt.principalLanes,
    ledger: rt.ledger,
    shards: c.TIMER_SHARDS,
    metrics,
    onDue: (e) => sw.schedule(e),
  });
  const attempter = new Attempter(rt, {
    client,
    writer,
    guard,
    metrics,
    signal: abort.signal,
    // The sweeper is built below; attempts only run after start, when it exists.
    onScheduled: (e) => sw.schedule(e),
    order,
  });
  const lanes: Lanes<AttemptJob> = new Lanes<AttemptJob>({
    limits: {
      first: { perEndpoint: c.DISPATCH_CONCURRENCY_PER_ENDPOINT, total: LIMITS.firstInFlight },
      retry: {
        perEndpoint: LIMITS.retriesPerEndpoint,
        total: LIMITS.retryInFlight,
      },
    },
    maxBacklog: LIMITS.backlog,
    endpointMaxBacklog: LIMITS.endpointBacklog,
    run: (job) => attempter.run(job).finally(() => job.done?.()),
    onError: (err) => log.error({ err }, 'attempt job failed'),
    onChange: () => sample(),
  });
  const sample = () => {
    for (const lane of LANES) {
      metrics.inFlight.set({ lane }, lanes.inFlight[lane]);
      metrics.backlog.set({ lane }, lanes.queued[lane]);
    }
  };
  const leases = retryShardLeases(rt, log);
  const sw = new Sweeper(rt, {
    enqueue: (job, lane) => lanes.enqueue(job.state.appId, lane, job),
    room: () => lanes.retryRoom(),
    accepts: (appId, lane) =>
      lane === 'first' ? lanes.acceptsFirst(appId) : lanes.acceptsRetry(appId),
    leases,
    onSnooze: () => metrics.deferred.inc({ reason: 'endpoint_busy' }),
    mayGo: async (s) => {
      const app = await getAppCached(rt, s.appId, { refreshAhead: true });
      return app?.webhookOrdering !== 'principal' || (await order.place(s)) !== 'held';
    },
  });
  const runner = runtimePipeline(rt, {
    name: CONSUMER,
    topics: [rt.topics.consentEvents],
    handler: consentEventHandler(rt, { lanes, metrics, order }),
    log,
    maxUncommitted: LIMITS.uncommitted,
    // The handler never waits for an endpoint, so every partition can progress at once.
    partitionsConsumedConcurrently: topicDefs.consentEvents.partitions,
  });
  try {
    await leases.start();
    await sw.start();
    await runner.start();
  } catch (err) {
    // Nothing may keep running when start fails: the process is about to report and exit.
    await runner.stop();
    await sw.stop();
    await leases.stop();
    lanes.close();
    writer.close();
    client.close();
    throw err;
  }
  log.info('dispatcher started');

  let stopping: Promise<void> | undefined;
  return {
    stop: () =>
      (stopping ??= (async () => {
        const steps: [string, () => Promise<unknown>][] = [
          [
            'intake',
            async () => {
              // No new events; queued first attempts are dropped (their events stay
              // uncommitted) and queued retries stay in the due-index.
              runner.quiesce();
              lanes.close();
            },
          ],
          ['sweeper', () => sw.stop()],
          [
            'drain',
            async () => {
              const bound = Math.min(c.SHUTDOWN_TIMEOUT_MS, c.WEBHOOK_TIMEOUT_MS + 5_000);
              const drained = await lanes.drain(bound);
              if (!drained) {
                log.warn({ bound }, 'attempts still running at the drain bound; aborting them');
                abort.abort();
                await lanes.drain(2_000);
              }
              // Attempts already made are recorded before the final offset commit.
              let timer: NodeJS.Timeout | undefined;
              await Promise.race([
                attempter.settled(),
                new Promise((r) => (timer = setTimeout(r, bound))),
              ]);
              clearTimeout(timer);
            },
          ],
          // Only once no attempt runs: the next owner of a shard makes what is due there.
          ['leases', () => leases.stop()],
          ['writer', async () => writer.close()],
          // What is recorded is committed; the rest is consumed again by the next owner.
          ['consumer', () => runner.stop()],
          ['client', async () => client.close()],
        ];
        for (const [name, run] of steps) {
          try {
            await run();
          } catch (err) {
            log.warn({ err, step: name }, 'dispatcher stop step failed');
          }
        }
        sample();
        log.info('dispatcher stopped');
      })()),
  };
}
