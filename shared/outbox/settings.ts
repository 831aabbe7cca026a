import { z } from 'zod';
import { positiveInt } from '../env.js';

/** The outbox: each process's writer and the relay that takes a stopped writer over. */
export const outboxSettings = {
  /** How often a writer saves its progress item (its heartbeat and watermark). */
  OUTBOX_RELAY_INTERVAL_MS: positiveInt(1_000),
  /** How long a write waits for its events' publish to Kafka before it answers anyway. */
  OUTBOX_PUBLISH_WAIT_MS: z.coerce.number().int().nonnegative().default(1_000),
  /** Commit transactions in flight at once per process; more leave together (group commit). */
  OUTBOX_TRANSACTIONS_IN_FLIGHT: z.coerce.number().int().min(1).max(64).default(1),
  /** Under sustained load, how long a commit waits for others to join it; 0: never. */
  OUTBOX_GROUP_LINGER_MS: z.coerce.number().int().min(0).max(50).default(0),
  /** Commits one relay or retry step publishes at once. */
  OUTBOX_RELAY_BATCH: z.coerce.number().int().min(1).max(1000).default(500),
  /** A writer whose heartbeat stands still this long is taken for stopped. */
  OUTBOX_WRITER_STALE_MS: positiveInt(10_000),
  /** Stored but unpublished commits a process holds (Kafka down) before it answers 503. */
  OUTBOX_MAX_OPEN: positiveInt(50_000),
};
