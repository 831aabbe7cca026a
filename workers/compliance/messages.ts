import { z } from 'zod';
import { postbackMessage } from '../../shared/domain/compliance/postback.js';
import { slaCheckMessage } from '../../shared/storage/ledger/flag-entries.js';

/**
 * The two messages of the postbacks topic, told apart by `type`: a postback the postback API
 * accepted (`postback`) and an SLA check from the timers worker (`sla.check`). Both are keyed by
 * dispatchId, so one dispatch's are handled in order.
 */
export const postbacksTopicMessage = z.preprocess(
  // Postbacks published before `type` was added carry none; they are postbacks.
  (raw) =>
    typeof raw === 'object' && raw !== null && !('type' in raw) && 'postbackId' in raw
      ? { ...raw, type: 'postback' }
      : raw,
  z.discriminatedUnion('type', [postbackMessage, slaCheckMessage]),
);
export type PostbacksTopicMessage = z.infer<typeof postbacksTopicMessage>;
