import { z } from 'zod';

/** The due-indexes of SLA checks, expiries, duties and dispatch retries. */
export const timerSettings = {
  /** Shards of each due-index: SLA checks and expiries, dispatch retries (grow only). */
  TIMER_SHARDS: z.coerce.number().int().min(1).max(256).default(8),
};
