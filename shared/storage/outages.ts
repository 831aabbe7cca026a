import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { isTransient } from '../errors.js';

/** Called once the store answers again, with the time its first failed request was sent. */
export type RecoveryListener = (failedSinceMs: number) => void;

/**
 * Watches the process's DynamoDB requests for outages: a transient failure (refused or reset
 * connection, timeout, 5xx) opens one, the next success closes it and tells the listeners when
 * it began. Writers that must not lose what the store acknowledged just before an outage use
 * it to check those writes again: a store killed with SIGKILL can lose the last writes it
 * acknowledged (DynamoDB Local does; `npm run chaos:store` measures it), which AWS DynamoDB
 * does not.
 */
export class StoreOutages {
  private failedSince: number | undefined;
  private readonly listeners = new Set<RecoveryListener>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Adds the watch to a client's middleware: every request of the client reports here. */
  watch(client: DynamoDBClient): void {
    client.middlewareStack.add(
      (next) => async (args) => {
        const sentAt = this.now();
        try {
          const result = await next(args);
          this.succeeded();
          return result;
        } catch (err) {
          if (isTransient(err)) this.failed(sentAt);
          throw err;
        }
      },
      { step: 'initialize', name: 'svcOutages', override: true },
    );
  }

  /** A request sent at `sentAtMs` failed transiently: an outage is open since then at least. */
  failed(sentAtMs: number): void {
    this.failedSince = Math.min(this.failedSince ?? sentAtMs, sentAtMs);
  }

  /** A request succeeded: an open outage is over. */
  succeeded(): void {
    const since = this.failedSince;
    if (since === undefined) return;
    this.failedSince = undefined;
    for (const l of this.listeners) l(since);
  }

  get open(): boolean {
    return this.failedSince !== undefined;
  }

  /** Returns the function that removes the listener. */
  onRecovered(listener: RecoveryListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
