import { z } from 'zod';
import { positiveInt } from '../env.js';

/** The due-index of SLA checks, expiries and duties, and the compliance gauges. */
export const timerSettings = {
  /** Shards of each due-index: SLA checks and expiries, dispatch retries (grow only). */
  TIMER_SHARDS: z.coerce.number().int().min(1).max(256).default(8),
  TIMER_SWEEP_INTERVAL_MS: positiveInt(1_000),
  /** The expiry family's sweep (reminders, expiries, erasure scrubs, inactivity). */
  EXPIRY_SWEEP_INTERVAL_MS: positiveInt(10_000),
  /** The duty family's sweep (grievance and breach-report deadlines). */
  DUTY_SWEEP_INTERVAL_MS: positiveInt(10_000),
  /** How often the awaiting-postback and erasure gauges are refreshed. */
  COMPLIANCE_GAUGE_INTERVAL_MS: positiveInt(15_000),
  /** Postbacks accepted per dispatch; past it the postback API answers 429. */
  POSTBACK_MAX_PER_DISPATCH: positiveInt(20),
};
