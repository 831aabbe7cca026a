import { positiveInt } from '../../env.js';

/** The outbox: each process's writer and the relay that takes a stopped writer over. */
export const outboxSettings = {
  /** How often a writer saves its progress item (its heartbeat and watermark). */
  OUTBOX_RELAY_INTERVAL_MS: positiveInt(1_000),
  /** A writer whose heartbeat stands still this long is taken for stopped. */
  OUTBOX_WRITER_STALE_MS: positiveInt(10_000),
};
