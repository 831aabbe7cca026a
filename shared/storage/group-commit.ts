import type { TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { Counter, Histogram, type Registry } from 'prom-client';
import { AppError } from '../errors.js';
import { getOrCreate } from '../metrics.js';

export type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/** Sends one TransactWriteItems (the caller supplies the client and a request token). */
export type SendTransaction = (items: TransactItem[]) => Promise<unknown>;

/** Sends one item's put, update or delete as a request of its own (`single`). */
export type SendSingle = (item: TransactItem) => Promise<unknown>;

export interface GroupCommitOptions {
  /** Items in one transaction at most (DynamoDB allows 100). */
  maxItems?: number;
  /** Transactions in flight at once; further writes wait and leave together in the next one. */
  maxInFlight?: number;
  /** The key attribute names of a table (by its full name), to keep one item per transaction. */
  keyAttributes: (table: string) => readonly string[];
  registry?: Registry;
  /** How `single` sends an item alone (PutItem, UpdateItem, DeleteItem). */
  sendSingle?: SendSingle;
  /** Reads back (consistently) the item a put names, for `single`'s `mine`. */
  readItem?: (
    put: NonNullable<TransactItem['Put']>,
  ) => Promise<Record<string, unknown> | undefined>;
}

interface Pending {
  items: TransactItem[];
  keys: string[];
  /** Runs alone next time: its group failed in a way that may be its own doing. */
  solo: boolean;
  resolve: () => void;
  reject: (err: unknown) => void;
}

interface Reason {
  Code?: string;
  Message?: string;
}

/**
 * Group commit for TransactWriteItems. Writes that arrive while `maxInFlight` transactions are
 * in flight queue up and leave together, up to `maxItems` items, in the next transaction; each
 * caller's promise settles once the transaction holding its items has committed (or was
 * refused). At low load every write leaves at once, alone.
 *
 * One transaction never names an item twice (DynamoDB refuses such a request): a write that
 * touches an item already in the group waits for the next one.
 *
 * A cancelled group (TransactionCanceledException) is taken apart with its reasons, which
 * come one per item in request order: a write whose own items hold a reason (its condition
 * failed, or contention on its item) gets a TransactionCanceledException carrying only its
 * own reasons, indexed as if it had been sent alone, so callers classify it as before; the
 * writes that held no reason were refused only because they shared the group, and go out
 * again. A request the store refuses as a whole for another reason (a validation error) is
 * retried with each write alone, so only the write at fault gets the error. Any other error
 * (a timeout, an unavailable store) reaches every write of the group, as it would each alone.
 */
export class GroupCommit {
  private readonly queue: Pending[] = [];
  private inFlight = 0;
  private readonly maxItems: number;
  private readonly maxInFlight: number;
  private readonly m;

  constructor(
    private readonly send: SendTransaction,
    private readonly o: GroupCommitOptions,
  ) {
    this.maxItems = o.maxItems ?? 100;
    this.maxInFlight = o.maxInFlight ?? 4;
    this.m = o.registry ? groupMetrics(o.registry) : undefined;
  }

  /**
   * Commits `items` atomically, possibly in one transaction with other writes' items. Once
   * `signal` aborts (nobody waits for the outcome any more), a write still waiting for its
   * transaction leaves the queue unsent and is refused with SVC_UNAVAILABLE: it was not applied.
   * One already sent goes on.
   */
  write(items: TransactItem[], signal?: AbortSignal): Promise<void> {
    if (items.length > this.maxItems)
      return Promise.reject(
        new Error(`transaction has ${items.length} items; DynamoDB allows ${this.maxItems}`),
      );
    if (signal?.aborted) {
      this.m?.abandoned.inc();
      return Promise.reject(abandoned());
    }
    return new Promise<void>((resolve, reject) => {
      const p: Pending = {
        items,
        keys: items.map((i) => this.keyOf(i)),
        solo: false,
        resolve,
        reject,
      };
      signal?.addEventListener(
        'abort',
        () => {
          const at = this.queue.indexOf(p);
          if (at < 0) return;
          this.queue.splice(at, 1);
          this.m?.abandoned.inc();
          reject(abandoned());
        },
        { once: true },
      );
      this.queue.push(p);
      this.pump();
    });
  }

  /**
   * Writes one item as a request of its own, never grouped and never queued behind the
   * transactions: AWS bills an item written alone once, and twice inside a transaction. For a
   * write that needs no other item to commit with it. A failed condition is refused as a
   * group's write is (`TransactionCanceledException`, its one reason `ConditionalCheckFailed`),
   * so callers classify both alike, unless `mine` recognises the item found in its place as the
   * one this put wrote. Once `signal` has aborted it is refused unsent.
   */
  async single(
    item: TransactItem,
    signal?: AbortSignal,
    mine?: (stored: Record<string, unknown>) => boolean,
  ): Promise<void> {
    if (!this.o.sendSingle) return this.write([item], signal);
    if (signal?.aborted) {
      this.m?.abandoned.inc();
      throw abandoned();
    }
    try {
      await this.o.sendSingle(item);
    } catch (err) {
      if ((err as { name?: string } | undefined)?.name !== 'ConditionalCheckFailedException')
        throw err;
      // A request has no token here: the SDK's retry of a put that timed out after it applied
      // fails its own condition. `mine` recognises the item it wrote.
      if (!(mine && this.o.readItem && item.Put && mine((await this.o.readItem(item.Put)) ?? {})))
        throw ownCancellation(err, [{ Code: 'ConditionalCheckFailed' }]);
    }
    this.m?.singles.inc();
  }

  private pump(): void {
    while (this.inFlight < this.maxInFlight && this.queue.length > 0) {
      const group = this.take();
      this.inFlight++;
      void this.run(group);
    }
  }

  /** The oldest write, then every later one that fits (items, distinct keys), in order. */
  private take(): Pending[] {
    const first = this.queue.shift()!;
    const group = [first];
    if (first.solo) return group;
    let size = first.items.length;
    const keys = new Set(first.keys);
    for (let i = 0; i < this.queue.length && size < this.maxItems;) {
      const p = this.queue[i]!;
      if (p.solo || size + p.items.length > this.maxItems || p.keys.some((k) => keys.has(k))) {
        i++;
        continue;
      }
      this.queue.splice(i, 1);
      group.push(p);
      size += p.items.length;
      for (const k of p.keys) keys.add(k);
    }
    return group;
  }

  /** Sends a group; its slot is free again before its writers hear of the outcome. */
  private async run(group: Pending[]): Promise<void> {
    const items = group.flatMap((p) => p.items);
    this.m?.size.observe(group.length);
    let failure: { err: unknown } | undefined;
    try {
      await this.send(items);
    } catch (err) {
      failure = { err };
    }
    this.inFlight--;
    if (!failure) for (const p of group) p.resolve();
    else if (group.length === 1) group[0]!.reject(failure.err);
    else this.split(group, failure.err);
    this.pump();
  }

  /** Settles or re-queues the writes of a group that failed (see the class comment). */
  private split(group: Pending[], err: unknown): void {
    const e = err as { name?: string; CancellationReasons?: Reason[] };
    const retry: Pending[] = [];
    if (e?.name === 'TransactionCanceledException' && Array.isArray(e.CancellationReasons)) {
      let at = 0;
      for (const p of group) {
        const own = e.CancellationReasons.slice(at, at + p.items.length);
        at += p.items.length;
        if (own.some((r) => r.Code !== undefined && r.Code !== 'None'))
          p.reject(ownCancellation(err, own));
        else retry.push(p);
      }
      // No write held a reason (should not happen): each goes alone rather than round again.
      if (retry.length === group.length) for (const p of retry) p.solo = true;
    } else if (e?.name === 'ValidationException') {
      for (const p of group) {
        p.solo = true;
        retry.push(p);
      }
    } else {
      for (const p of group) p.reject(err);
      return;
    }
    this.m?.retried.inc(retry.length);
    this.queue.unshift(...retry);
  }

  private keyOf(item: TransactItem): string {
    const op = item.Put ?? item.Update ?? item.Delete ?? item.ConditionCheck;
    const table = op?.TableName ?? '';
    const source = (item.Put?.Item ??
      (op as { Key?: Record<string, unknown> })?.Key ??
      {}) as Record<string, unknown>;
    return JSON.stringify([table, ...this.o.keyAttributes(table).map((a) => source[a])]);
  }
}

/** A cancellation as the write would have got it alone: its own reasons, from index 0. */
export function ownCancellation(err: unknown, reasons: Reason[]): Error {
  const own = new Error(
    `Transaction cancelled, please refer cancellation reasons for specific reasons [${reasons.map((r) => r.Code ?? 'None').join(', ')}]`,
  ) as Error & { CancellationReasons: Reason[]; $metadata?: unknown };
  own.name = 'TransactionCanceledException';
  own.CancellationReasons = reasons;
  own.$metadata = (err as { $metadata?: unknown }).$metadata;
  return own;
}

const abandoned = () =>
  new AppError(
    'SVC_UNAVAILABLE',
    'The request was given up before its change was sent to the store; nothing was applied',
    { retryAfterS: 1 },
  );

function groupMetrics(registry: Registry) {
  return {
    singles: getOrCreate(
      registry,
      'svc_dynamodb_single_writes_total',
      () =>
        new Counter({
          name: 'svc_dynamodb_single_writes_total',
          help: 'Writes of one item sent as a request of their own, outside any transaction (a new consent’s principal and transaction: shared/storage/consents/store.ts)',
          registers: [registry],
        }),
    ),
    abandoned: getOrCreate(
      registry,
      'svc_dynamodb_group_commit_abandoned_total',
      () =>
        new Counter({
          name: 'svc_dynamodb_group_commit_abandoned_total',
          help: 'Writes not sent, before or while queued, because nobody waited for them any more (the caller hung up, or the request deadline answered 503)',
          registers: [registry],
        }),
    ),
    size: getOrCreate(
      registry,
      'svc_dynamodb_group_commit_writes',
      () =>
        new Histogram({
          name: 'svc_dynamodb_group_commit_writes',
          help: 'Writes (commits of a change and its events) per TransactWriteItems request',
          buckets: [1, 2, 4, 8, 16, 32],
          registers: [registry],
        }),
    ),
    retried: getOrCreate(
      registry,
      'svc_dynamodb_group_commit_retried_total',
      () =>
        new Counter({
          name: 'svc_dynamodb_group_commit_retried_total',
          help: 'Writes sent again because another write of their group was refused',
          registers: [registry],
        }),
    ),
  };
}
