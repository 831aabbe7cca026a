import type { TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { Counter, Histogram, type Registry } from 'prom-client';
import { AppError, coerceError } from '../errors.js';
import type { Logger } from '../logger.js';
import { getOrCreate } from '../metrics.js';
import type { StoreOutages } from './outages.js';
import { RecentWrites } from './recent-writes.js';

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
  /**
   * The process's store outages: when one ends, the writes committed from `RecentWrites.WINDOW_MS`
   * before it began are sent again, alone (see `recheck`).
   */
  outages?: StoreOutages;
  /** Where a recheck reports what it wrote again. */
  log?: Logger;
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
  /** Writes committed lately, oldest first, with when (see `recheck`). */
  private readonly recent = new RecentWrites<TransactItem[]>();

  constructor(
    private readonly send: SendTransaction,
    private readonly o: GroupCommitOptions,
  ) {
    this.maxItems = o.maxItems ?? 100;
    this.maxInFlight = o.maxInFlight ?? 4;
    this.m = o.registry ? groupMetrics(o.registry) : undefined;
    if (o.outages) this.recent.watch(o.outages, (since) => this.recheck(since));
  }

  /**
   * After a store outage, every write committed from `RecentWrites.WINDOW_MS` before it began is
   * sent again, alone, with a new request token: a store killed with SIGKILL can lose writes it
   * acknowledged (DynamoDB Local does), and their callers were answered already. A write's own
   * conditions decide: one that is still there (a put under `attribute_not_exists`, an update
   * under a version) is refused and changes nothing; one that was lost is applied again, events
   * and all (consumers deduplicate them). Only writes guarded that way are sent: one with no
   * condition but on its outbox item could overwrite a newer change, and is left alone.
   *
   * A write that is refused may still have lost part of its items: the refusal names, item by
   * item, which conditions failed, and an item under a condition that still holds (reason
   * `None`: an `attribute_not_exists` put whose item is gone) was lost. Those items are written
   * again, under their own conditions, with the write's unconditioned puts and, if it is gone
   * too, its outbox item (see `repair`). Resolves to how many writes were applied again, whole
   * or in part.
   */
  async recheck(outageSinceMs: number): Promise<number> {
    const writes = this.recent.before(outageSinceMs);
    const done = { restored: 0, repaired: 0 };
    let pending = writes.filter(guarded);
    try {
      for (let round = 0; round < 3 && pending.length > 0; round++) {
        if (round > 0) await new Promise((r) => setTimeout(r, 200 * round));
        const contended: TransactItem[][] = [];
        for (const w of pending) {
          const outcome = await this.recheckWrite(w);
          if (outcome === 'contended') contended.push(w);
          else if (outcome !== 'intact') done[outcome]++;
        }
        pending = contended;
      }
    } catch (err) {
      this.o.log?.warn({ err }, 'write recheck after a store outage failed');
      // The store failed again: its next recovery checks again.
      if (coerceError(err).retriable) this.o.outages?.failed(outageSinceMs);
    }
    const { restored, repaired } = done;
    this.m?.rechecks.inc();
    this.m?.restored.inc(restored + repaired);
    this.o.log?.[restored + repaired > 0 ? 'warn' : 'info'](
      { checked: writes.length, restored, repaired },
      restored + repaired > 0
        ? 'writes the store acknowledged before its outage were gone, whole or in part; applied again'
        : 'writes the store acknowledged before its outage are all still there',
    );
    return restored + repaired;
  }

  /** One write sent again: applied whole, refused (then repaired where part of it is gone). */
  private async recheckWrite(
    w: TransactItem[],
  ): Promise<'restored' | 'repaired' | 'intact' | 'contended'> {
    try {
      await this.send(w);
      return 'restored';
    } catch (err) {
      const e = err as { name?: string; CancellationReasons?: Reason[] };
      if (e?.name !== 'TransactionCanceledException') throw err;
      return this.repair(w, e.CancellationReasons);
    }
  }

  /**
   * Writes again the items of `w` that its refused resend shows were lost. Only a put under
   * `attribute_not_exists` tells that for sure: its reason is `None` (the condition holds) only
   * if the item is gone. If one such item (not the outbox item) is gone, each of them is put
   * again under its condition, then each unconditioned put of the write only where its item is
   * gone too, then the outbox item if it is gone (its events go out again; consumers deduplicate
   * them). Item by item: what survived of the write stays as it is. A reason other than a failed
   * condition (contention) asks for another round.
   */
  private async repair(
    w: TransactItem[],
    reasons: Reason[] | undefined,
  ): Promise<'intact' | 'repaired' | 'contended'> {
    if (!Array.isArray(reasons) || reasons.length !== w.length) return 'intact';
    const code = (n: number) => reasons[n]?.Code ?? 'None';
    if (w.some((_, n) => !['None', 'ConditionalCheckFailed'].includes(code(n)))) return 'contended';
    const gone = w.filter((i, n) => creates(i) && code(n) === 'None');
    if (!gone.some((i) => !isOutbox(i))) return 'intact';
    const again = [
      ...gone.filter((i) => !isOutbox(i)),
      ...w
        .filter((i) => i.Put && i.Put.ConditionExpression === undefined)
        .map((i) => this.ifAbsent(i)),
      ...gone.filter(isOutbox),
    ];
    let written = 0;
    for (const item of again) {
      try {
        await this.send([item]);
        written++;
      } catch (err) {
        if ((err as { name?: string })?.name !== 'TransactionCanceledException') throw err;
      }
    }
    return written > 0 ? 'repaired' : 'intact';
  }

  /** An unconditioned put, made to write only where its item is gone. */
  private ifAbsent(i: TransactItem): TransactItem {
    const put = i.Put!;
    const key = this.o.keyAttributes(put.TableName ?? '')[0] ?? 'pk';
    return {
      Put: {
        ...put,
        ConditionExpression: 'attribute_not_exists(#k)',
        ExpressionAttributeNames: { ...put.ExpressionAttributeNames, '#k': key },
      },
    };
  }

  /** Waits for the recheck after the last outage (tests). */
  settledRecheck(): Promise<unknown> {
    return this.recent.settled();
  }

  private remember(group: Pending[]): void {
    if (this.o.outages) this.recent.add(group.map((p) => p.items));
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
   * write that needs no other item to commit with it. Remembered like a group's writes (a store
   * outage's `recheck` sends it again under its condition). A failed condition is refused as a
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
    if (this.o.outages) this.recent.add([[item]]);
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
    if (!failure) this.remember(group);
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

/**
 * Whether sending `items` again can only restore them: some item other than an outbox put
 * carries a condition that the write, once applied, makes false (`attribute_not_exists` on
 * an item it puts, a version it moves on). An outbox item's own condition does not count: the
 * item is deleted once published.
 */
function guarded(items: TransactItem[]): boolean {
  return items.some((i) => {
    if (i.Put) return i.Put.ConditionExpression !== undefined && !isOutbox(i);
    return (i.Update ?? i.Delete)?.ConditionExpression !== undefined;
  });
}

/** A put that creates its item: under `attribute_not_exists`, so it fails where it exists. */
function creates(i: TransactItem): boolean {
  return /^\s*attribute_not_exists\(/.test(i.Put?.ConditionExpression ?? '');
}

/** The outbox item of a commit: its messages, packed (see `Outbox`). */
function isOutbox(i: TransactItem): boolean {
  return i.Put !== undefined && 'packed' in (i.Put.Item ?? {});
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
    rechecks: getOrCreate(
      registry,
      'svc_dynamodb_group_commit_rechecks_total',
      () =>
        new Counter({
          name: 'svc_dynamodb_group_commit_rechecks_total',
          help: 'Rechecks, after a store outage, of the writes committed just before it',
          registers: [registry],
        }),
    ),
    restored: getOrCreate(
      registry,
      'svc_dynamodb_group_commit_restored_total',
      () =>
        new Counter({
          name: 'svc_dynamodb_group_commit_restored_total',
          help: 'Committed writes the store no longer had after an outage, applied again',
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
