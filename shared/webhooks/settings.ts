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
};
