import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { isTransient } from '../errors.js';

/**
 * Called once the store answers again, with the time its first failed request was sent and
 * whether any connection to it was refused or cut meanwhile (it went away, as a killed process
 * does, rather than only answering slowly, as a stalled one does).
 */
export type RecoveryListener = (failedSinceMs: number, connectionLost: boolean) => void;

/** Socket errors of a store that went away. */
const LOST = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE']);

function connectionLost(err: unknown, depth = 0): boolean {
  const e = err as { code?: string; message?: string; cause?: unknown } | undefined;
  if (!e || typeof e !== 'object' || depth > 5) return false;
  if (LOST.has(e.code ?? '') || /socket hang up/i.test(e.message ?? '')) return true;
  return connectionLost(e.cause, depth + 1);
}

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
  private lost = false;
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
          if (isTransient(err)) this.failed(sentAt, connectionLost(err));
          throw err;
        }
      },
      { step: 'initialize', name: 'svcOutages', override: true },
    );
  }

  /**
   * A request sent at `sentAtMs` failed transiently: an outage is open since then at least;
   * `lost`: its connection was refused or cut.
   */
  failed(sentAtMs: number, lost = true): void {
    this.failedSince = Math.min(this.failedSince ?? sentAtMs, sentAtMs);
    this.lost ||= lost;
  }

  /** A request succeeded: an open outage is over. */
  succeeded(): void {
    const since = this.failedSince;
    if (since === undefined) return;
    const lost = this.lost;
    this.failedSince = undefined;
    this.lost = false;
    for (const l of this.listeners) l(since, lost);
  }

  get open(): boolean {
    return this.failedSince !== undefined;
  }

  /** When the open outage began (its first failed request was sent), if one is open. */
  get openSince(): number | undefined {
    return this.failedSince;
  }

  /** Returns the function that removes the listener. */
  onRecovered(listener: RecoveryListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
