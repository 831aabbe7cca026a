import { randomUUID } from 'node:crypto';
import { AppError, coerceError } from '../../shared/errors.js';
import { type BatchPuts, type FirstAttemptRecord } from '../../shared/storage/ledger/attempts.js';
import { needsStamp } from '../../shared/storage/ledger/changes.js';
import type { Logger } from '../../shared/logger.js';
import type { Runtime } from '../../shared/runtime.js';
import { backoffMs } from '../../shared/backoff.js';
import { cancellationReasons } from '../../shared/storage/dynamo.js';
import type { DispatcherMetrics } from './metrics.js';

/**
 * How a first attempt and its dispatch reach the ledger.
 * - `fast`: the event's partition is certainly this worker's, so nobody else can be writing
 *   this dispatch: records are group-committed with BatchWriteItem, 25 items a request, the
 *   SLA checks and the carriers (dispatch items that list others of their app) first and the
 *   other dispatch items (holding their first attempt and, when it failed, their retry's due
 *   entry) after them, so a dispatch item in the ledger always has its SLA check and, without
 *   a `gsi1` entry, its carrier (app-pages.ts). A
 *   dispatch item goes without a change-index stamp (one index write less) unless it is the
 *   first of its app this writer writes, or its period's first sealing may come before it
 *   lands (shared/storage/ledger/changes.ts); one that landed that late after all is stamped before
 *   its record is answered.
 * - `safe`: anyone else might (after a rebalance or a restart): conditional transactions,
 *   group-committed too (up to 90 items a transaction), and a dispatch that already exists
 *   makes its record a duplicate that writes nothing. When a transaction is cancelled because
 *   some of its dispatches exist, those are duplicates and the rest go again without them.
 *   After a restart a whole backlog takes this path, so one transaction per record would make
 *   the store's per-request cost the drain rate.
 */
export type WriteMode = 'fast' | 'safe';
export type FirstWriteResult = 'recorded' | 'duplicate';

const BATCH = 25;

/** Items in one group-committed safe transaction (DynamoDB allows 100). */
const SAFE_ITEMS = 90;
/** Longest wait between two tries of a safe transaction that failed transiently. */
const SAFE_RETRY_MAX_MS = 5_000;

interface Pending {
  rec: FirstAttemptRecord;
  /** When it was queued (ms). */
  at: number;
  resolve: (r: FirstWriteResult) => void;
  reject: (e: unknown) => void;
}

export class FirstAttemptWriter {
  private readonly queue: Pending[] = [];
  private active = 0;
  private readonly safeQueue: Pending[] = [];
  private safeActive = 0;
  private closed = false;
  /** Apps a stamped dispatch item of this writer landed for (the sealer can find them). */
  private readonly announced = new Set<string>();
  /** The timer that starts a flush once its oldest record has lingered. */
  private lingering: NodeJS.Timeout | undefined;

  constructor(
    private readonly rt: Runtime,
    private readonly o: {
      metrics: DispatcherMetrics;
      log: Logger;
      /** BatchWriteItem requests in flight at once. */
      maxFlushes: number;
      /**
       * How long a fast record waits for others before a flush that is not full starts (0: not
       * at all). Records of one app written together share a carrier (app-pages.ts); the
       * webhook was sent before, so only the event's commit in Kafka waits.
       */
      lingerMs?: number;
    },
  ) {}

  write(rec: FirstAttemptRecord, mode: WriteMode): Promise<FirstWriteResult> {
    return new Promise((resolve, reject) => {
      if (mode === 'safe') {
        this.safeQueue.push({ rec, at: Date.now(), resolve, reject });
        this.pumpSafe();
      } else {
        this.queue.push({ rec, at: Date.now(), resolve, reject });
        this.pump();
      }
    });
  }

  /** Gives up on waiting writes (they are redone from Kafka). */
  close(): void {
    clearTimeout(this.lingering);
    this.closed = true;
    for (const p of [...this.queue.splice(0), ...this.safeQueue.splice(0)])
      p.reject(new AppError('SVC_UNAVAILABLE', 'dispatcher is stopping'));
  }

  /**
   * Natural batching: a flush starts whenever a slot is free, taking all that waits (≤ 25
   * items a phase), once the oldest record has waited `lingerMs` or a batch is full.
   */
  private pump(): void {
    while (this.queue.length > 0 && this.active < this.o.maxFlushes) {
      const wait = this.queue[0]!.at + (this.o.lingerMs ?? 0) - Date.now();
      if (wait > 0 && this.queue.length < BATCH) {
        this.lingering ??= setTimeout(() => {
          this.lingering = undefined;
          this.pump();
        }, wait);
        return;
      }
      const batch: Pending[] = [];
      let children = 0;
      while (this.queue.length > 0 && batch.length < BATCH) {
        const n = this.queue[0]!.rec.children.length;
        if (children + n > BATCH) break;
        children += n;
        batch.push(this.queue.shift()!);
      }
      this.active++;
      this.o.metrics.ledgerBatch.observe(batch.length);
      void this.flush(batch).finally(() => {
        this.active--;
        this.pump();
      });
    }
  }

  private async flush(batch: Pending[]): Promise<void> {
    try {
      // The SLA checks first, then the dispatch items (see firstAttemptPhases).
      const recs = batch.map((p) => p.rec);
      const stamped = this.toStamp(recs);
      for (const phase of this.rt.ledger.firstAttemptPhases(recs, (r) => stamped.has(r)))
        await this.batchWrite(phase);
      await this.stampLanded(recs.filter((r) => !stamped.has(r)));
      for (const r of stamped) this.announced.add(String(r.head.appId));
      const carriers = recs.filter((r) => r.listedBy === 'itself').length;
      const listed = recs.filter((r) => r.listedBy).length;
      if (carriers > 0) this.o.metrics.ledgerPaged.inc({ item: 'carrier' }, carriers);
      if (listed > 0) this.o.metrics.ledgerPaged.inc({ item: 'dispatch' }, listed);
      for (const p of batch) p.resolve('recorded');
    } catch (err) {
      for (const p of batch) p.reject(err);
    }
  }

  /**
   * The records whose dispatch item keeps its change stamp: the first of each app this writer
   * has not announced yet, and any whose period may be sealed before it lands.
   */
  private toStamp(recs: readonly FirstAttemptRecord[]): Set<FirstAttemptRecord> {
    const nowMs = Date.now();
    const batchApps = new Set<string>();
    const out = new Set<FirstAttemptRecord>();
    for (const r of recs) {
      const app = String(r.head.appId);
      const known = this.announced.has(app) || batchApps.has(app);
      if (!known || needsStamp(String(r.head.createdAt), nowMs, this.rt.config)) out.add(r);
      batchApps.add(app);
    }
    return out;
  }

  /** Stamps those of these landed records that landed too late to go without (`stampLate`). */
  private async stampLanded(recs: readonly FirstAttemptRecord[]) {
    if (recs.length === 0) return;
    const items = recs.map((r) => ({
      dispatchId: r.dispatchId,
      appId: String(r.head.appId),
      createdAt: String(r.head.createdAt),
    }));
    await this.retrying('change stamp of late dispatch items failed; retrying', async () => {
      const n = await this.rt.ledger.stampLate(items, Date.now());
      if (n > 0) {
        this.o.metrics.ledgerLateStamps.inc(n);
        this.o.log.info({ stamped: n }, 'dispatch items landed late: change-stamped');
      }
      return true;
    });
  }

  /** BatchWriteItem until every item is in, backing off on throttling and transient errors. */
  private async batchWrite(puts: BatchPuts) {
    let request = puts;
    if (Object.keys(request).length === 0) return;
    await this.retrying('ledger batch write failed; retrying', async () => {
      request = await this.rt.ledger.writeBatch(request);
      return Object.keys(request).length === 0;
    });
  }

  /**
   * Runs `step` until it says it is done, backing off between rounds; a transient error is
   * logged (`warning`) and tried again, any other thrown. Stops once the writer is closed.
   */
  private async retrying(warning: string, step: () => Promise<boolean>): Promise<void> {
    for (let round = 0; ; round++) {
      if (this.closed) throw new AppError('SVC_UNAVAILABLE', 'dispatcher is stopping');
      if (round > 0) await sleep(backoffMs(round, { baseMs: 25, maxMs: 2_000 }));
      try {
        if (await step()) return;
      } catch (err) {
        if (!coerceError(err).retriable) throw err;
        this.o.log.warn({ err, round }, warning);
      }
    }
  }

  /** Natural batching of safe records, as `pump` does for fast ones (≤ SAFE_ITEMS items). */
  private pumpSafe(): void {
    while (this.safeQueue.length > 0 && this.safeActive < this.o.maxFlushes) {
      const batch: Pending[] = [];
      const heads = new Set<unknown>();
      let items = 0;
      while (this.safeQueue.length > 0) {
        const next = this.safeQueue[0]!;
        const n = next.rec.children.length + 1;
        if (batch.length > 0 && items + n > SAFE_ITEMS) break;
        // A transaction may not name one item twice: a second record of the same dispatch
        // waits for the next one (where its condition makes it a duplicate).
        if (heads.has(next.rec.head.pk)) break;
        heads.add(next.rec.head.pk);
        items += n;
        batch.push(this.safeQueue.shift()!);
      }
      this.safeActive++;
      void this.transact(batch).finally(() => {
        this.safeActive--;
        this.pumpSafe();
      });
    }
  }

  /**
   * One conditional transaction for the batch's records. A cancellation whose failed
   * conditions name some dispatches resolves those as duplicates and commits the rest again.
   * Contention and other transient errors (a timeout, a slow or unavailable store) are retried,
   * with capped back-off, for as long as they last: each record's webhook was sent already, and
   * a record given up on would be redone from Kafka, sending it again. A retry after a failure
   * that was not a cancellation carries the same request token, so a transaction whose answer
   * was lost succeeds again without writing twice. Only a permanent error or `close` fails the
   * batch (its events are redone from Kafka).
   */
  private async transact(batch: Pending[]): Promise<void> {
    let left = batch;
    let token = randomUUID();
    for (let tries = 0; left.length > 0;) {
      try {
        if (this.closed) throw new AppError('SVC_UNAVAILABLE', 'dispatcher is stopping');
        const r = await this.rt.ledger.commitFirstAttempts(
          left.map((p) => p.rec),
          token,
        );
        if (r.committed) {
          for (const p of left) p.resolve('recorded');
          return;
        }
        const dup = new Set([...r.duplicates].map((i) => left[i]!));
        for (const p of dup) p.resolve('duplicate');
        left = left.filter((p) => !dup.has(p));
        token = randomUUID();
      } catch (err) {
        const c = cancellationReasons(err);
        if (c) token = randomUUID(); // cancelled: nothing was written, and the next differs
        const retriable = (c?.contention ?? false) || coerceError(err).retriable;
        if (!retriable || this.closed) {
          for (const p of left) p.reject(err);
          return;
        }
        tries++;
        if (tries % 5 === 0)
          this.o.log.warn(
            { err, tries, records: left.length },
            'ledger transaction failed; retrying until it lands',
          );
        await sleep(backoffMs(tries - 1, { baseMs: 100, maxMs: SAFE_RETRY_MAX_MS }));
      }
    }
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
