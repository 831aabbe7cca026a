import { z } from 'zod';
import { envBoolUnset, positiveInt } from '../env.js';

/** Webhook dispatch (workers/dispatcher) and its SSRF guard. */
export const webhookSettings = {
  /** A delivery is a 2xx within this time. */
  WEBHOOK_TIMEOUT_MS: positiveInt(10_000),
  /** Comma-separated CIDRs webhooks may reach even though they are not global. */
  WEBHOOK_ALLOWLIST: z.string().default(''),
  /** Sandbox apps may deliver to loopback; unset: only on the embedded default. */
  WEBHOOK_ALLOW_LOOPBACK_SANDBOX: envBoolUnset,
  /** An endpoint with no success for this long is disabled and its contact e-mailed. */
  WEBHOOK_DISABLE_AFTER_MS: positiveInt(5 * 24 * 3_600_000),
  /** Concurrent first attempts per endpoint (retries: 2 per endpoint). */
  DISPATCH_CONCURRENCY_PER_ENDPOINT: positiveInt(8),
  /** How far producers' clocks may run ahead of the dispatcher's. */
  DISPATCH_CLOCK_SKEW_MS: z.coerce.number().int().nonnegative().default(60_000),
  /** An attempt not completed this long after it was due is attempted again. */
  DISPATCH_SAFETY_NET_MS: positiveInt(60_000),
  /** How often the retry sweeper reads the due-index (its shards: TIMER_SHARDS). */
  DISPATCH_SWEEP_INTERVAL_MS: positiveInt(1_000),
};
