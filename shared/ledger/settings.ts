import { z } from 'zod';
import { positiveInt } from '../env.js';

/** Ledger checkpoints: every process must use the same period. */
export const ledgerSettings = {
  /** Each app's dispatches are sealed per period of this length (by the event's createdAt). */
  LEDGER_CHECKPOINT_PERIOD_MS: z.coerce.number().int().min(100).default(3_600_000),
  /** How long after a period closes it is sealed, so writes in flight land first. */
  LEDGER_CHECKPOINT_LAG_MS: z.coerce.number().int().nonnegative().default(300_000),
  /** Margin before a period's first sealing within which a new dispatch gets a change stamp. */
  LEDGER_CHANGE_STAMP_MARGIN_MS: z.coerce.number().int().nonnegative().default(60_000),
  /** How often the checkpoint worker looks for a closed period or changes to seal. */
  LEDGER_CHECKPOINT_INTERVAL_MS: positiveInt(15_000),
};
