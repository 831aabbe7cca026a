import { BatchWriteCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { AppError, coerceError } from '../../shared/errors.js';
import type { FirstAttemptRecord } from '../../shared/ledger/attempts.js';
import type { Logger } from '../../shared/logger.js';
import type { Runtime } from '../../shared/runtime.js';
import { backoffMs, withRetries } from '../../shared/retry.js';
import { isConditionFailure } from '../../shared/storage/dynamo.js';
import type { DispatcherMetrics } from './metrics.js';

/**
 * How a first attempt and its dispatch reach the ledger.
 * - `fast`: the event's partition is certainly this worker's, so nobody else can be writing
 *   this dispatch: records are group-committed with BatchWriteItem, 25 items a request, the
 *   due entries first and the dispatch items (holding their first attempt) after them, so a
 *   dispatch item in the ledger always has its due entries.
 * - `safe`: anyone else might (after a rebalance or a restart): one conditional transaction,
 *   and a dispatch that already exists makes this a duplicate that writes nothing.
 */
export type WriteMode = 'fast' | 'safe';
export type FirstWriteResult = 'recorded' | 'duplicate';

const BATCH = 25;

interface Pending {
  rec: FirstAttemptRecord;
  resolve: (r: FirstWriteResult) => void;
  reject: (e: unknown) => void;
}

export class FirstAttemptWriter {
  private readonly queue: Pending[] = [];
  private active = 0;
  private closed = false;

  constructor(
    private readonly rt: Runtime,
    private readonly o: {
      metrics: DispatcherMetrics;
      log: Logger;
      /** BatchWriteItem requests in flight at once. */
      maxFlushes: number;
    },
  ) {}

  write(rec: FirstAttemptRecord, mode: WriteMode): Promise<FirstWriteResult> {
    if (mode === 'safe') return this.transact(rec);
    return new Promise((resolve, reject) => {
      this.queue.push({ rec, resolve, reject });
      this.pump();
    });
  }

  /** Gives up on waiting writes (they are redone from Kafka). */
  close(): void {
    this.closed = true;
    for (const p of this.queue.splice(0))
      p.reject(new AppError('SVC_UNAVAILABLE', 'dispatcher is stopping'));
  }

  /** Natural batching: a flush starts whenever a slot is free, taking all that waits (≤ 25 items a phase). */
  private pump(): void {
    while (this.queue.length > 0 && this.active < this.o.maxFlushes) {
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
      const children = batch.flatMap((p) => p.rec.children);
      if (children.length > 0) await this.batchWrite(children);
      await this.batchWrite(batch.map((p) => ({ table: this.rt.tables.ledger, item: p.rec.head })));
      for (const p of batch) p.resolve('recorded');
    } catch (err) {
      for (const p of batch) p.reject(err);
    }
  }

  /** BatchWriteItem until every item is in, backing off on throttling and transient errors. */
  private async batchWrite(items: { table: string; item: Record<string, unknown> }[]) {
    let request: Record<string, { PutRequest: { Item: Record<string, unknown> } }[]> = {};
    for (const { table, item } of items)
      (request[table] ??= []).push({ PutRequest: { Item: item } });
    for (let round = 0; Object.keys(request).length > 0; round++) {
      if (this.closed) throw new AppError('SVC_UNAVAILABLE', 'dispatcher is stopping');
      if (round > 0) await sleep(backoffMs(round, { baseMs: 25, maxMs: 2_000 }));
      try {
        const r = await this.rt.dynamo.doc.send(new BatchWriteCommand({ RequestItems: request }));
        request = (r.UnprocessedItems ?? {}) as typeof request;
      } catch (err) {
        if (!coerceError(err).retriable) throw err;
        this.o.log.warn({ err, round }, 'ledger batch write failed; retrying');
      }
    }
  }

  private async transact(rec: FirstAttemptRecord): Promise<FirstWriteResult> {
    const { rt } = this;
    const command = new TransactWriteCommand({
      TransactItems: [
        ...rec.children.map(({ table, item }) => ({
          Put: {
            TableName: table,
            Item: item,
            ...(table === rt.tables.ledger
              ? { ConditionExpression: 'attribute_not_exists(pk)' }
              : {}),
          },
        })),
        {
          Put: {
            TableName: rt.tables.ledger,
            Item: rec.head,
            ConditionExpression: 'attribute_not_exists(pk)',
          },
        },
      ],
    });
    return withRetries(async () => {
      try {
        await rt.dynamo.doc.send(command);
        return 'recorded' as const;
      } catch (err) {
        if (isConditionFailure(err)) return 'duplicate' as const;
        throw err;
      }
    }, 6);
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
