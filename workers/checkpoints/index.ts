import { Counter, Gauge, type Registry } from 'prom-client';
import { sealClosedPeriods, type SealResult, type SeenHeads } from '../../shared/ledger/seal.js';
import { getOrCreate } from '../../shared/metrics.js';
import type { WorkerModule } from '../../shared/module.js';
import type { Runtime } from '../../shared/runtime.js';
import { signingKeys } from '../../shared/signing/keys.js';

export interface CheckpointWorkerOptions {
  /** The clock deciding which periods have closed (epoch ms); tests inject one. */
  now?: () => number;
}

export function checkpointMetrics(registry: Registry) {
  const written = getOrCreate(
    registry,
    'svc_ledger_checkpoints_total',
    () =>
      new Counter({
        name: 'svc_ledger_checkpoints_total',
        help: 'Signed ledger checkpoints written, by kind (period: a closed period; reseal: a sealed period that changed)',
        labelNames: ['kind'],
        registers: [registry],
      }),
  );
  const refused = getOrCreate(
    registry,
    'svc_ledger_checkpoint_refusals_total',
    () =>
      new Counter({
        name: 'svc_ledger_checkpoint_refusals_total',
        help: 'Periods the sealer refused to seal again because the ledger lost what an earlier checkpoint sealed',
        registers: [registry],
      }),
  );
  const sealedThrough = getOrCreate(
    registry,
    'svc_ledger_checkpoint_sealed_through_seconds',
    () =>
      new Gauge({
        name: 'svc_ledger_checkpoint_sealed_through_seconds',
        help: 'Every closed period up to this Unix time has a signed checkpoint',
        registers: [registry],
      }),
  );
  for (const kind of ['period', 'reseal']) written.inc({ kind }, 0);
  refused.inc(0);
  return { written, refused, sealedThrough };
}

/**
 * Seals the ledger (docs/security.md, Ledger checkpoints; shared/ledger/seal.ts): every
 * LEDGER_CHECKPOINT_INTERVAL_MS it looks whether a period has closed (plus the lag) since the last
 * pass and, if so, signs a checkpoint per app for it and re-signs sealed periods whose dispatches
 * changed. Not a Kafka consumer: its input is the ledger's change index. Any number of copies may
 * run.
 */
export function createCheckpointWorker(o: CheckpointWorkerOptions = {}): WorkerModule {
  const now = o.now ?? Date.now;
  return {
    name: 'checkpoints',
    start: async (rt: Runtime) => {
      const keys = signingKeys(rt.config);
      const log = rt.log.child({ worker: 'checkpoints' });
      const metrics = checkpointMetrics(rt.registry);
      const report = (r: SealResult) => {
        metrics.written.inc({ kind: 'period' }, r.sealed);
        metrics.written.inc({ kind: 'reseal' }, r.resealed);
        metrics.refused.inc(r.refusals.length);
        metrics.sealedThrough.set(Date.parse(r.closedThrough) / 1000);
        for (const f of r.refusals)
          log.error(
            { appId: f.appId, periodStart: f.periodStart, reason: f.reason },
            'ledger checkpoint refused: the ledger no longer holds what an earlier checkpoint sealed',
          );
        // The newest checkpoint of each app, logged: a copy of the chain heads outside the store.
        const heads = new Map(r.checkpoints.map((c) => [c.appId, c]));
        for (const c of heads.values())
          log.info(
            { appId: c.appId, seq: c.seq, hash: c.hash, sealedThrough: c.sealedThrough },
            'ledger checkpoint',
          );
      };
      // Chain heads this copy saw: a chain found shorter later lost checkpoints.
      const seen: SeenHeads = new Map();
      let stopped = false;
      let timer: NodeJS.Timeout | undefined;
      let running: Promise<void> = Promise.resolve();
      const tick = () => {
        running = sealClosedPeriods(rt, keys, now(), seen)
          .then((r) => (r ? report(r) : undefined))
          .catch((err: unknown) => log.warn({ err }, 'ledger checkpoint pass failed; retried'))
          .finally(() => {
            if (!stopped) timer = setTimeout(tick, rt.config.LEDGER_CHECKPOINT_INTERVAL_MS);
          });
      };
      tick();
      log.info(
        {
          periodMs: rt.config.LEDGER_CHECKPOINT_PERIOD_MS,
          lagMs: rt.config.LEDGER_CHECKPOINT_LAG_MS,
          keyId: keys.active.kid,
        },
        'checkpoint worker started',
      );
      let stopping: Promise<void> | undefined;
      return {
        stop: () =>
          (stopping ??= (async () => {
            stopped = true;
            if (timer) clearTimeout(timer);
            await running;
            log.info('checkpoint worker stopped');
          })()),
      };
    },
  };
}

export const checkpointWorker: WorkerModule = createCheckpointWorker();
