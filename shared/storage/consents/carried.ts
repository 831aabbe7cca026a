import type { OutMessage } from '../../bus/producer.js';
import { creationEvents } from '../../domain/consent/carried.js';
import type { ConsentEvent } from '../../domain/consent/events.js';
import { withFullRecords, type StoredTransaction } from '../../domain/consent/model.js';
import { ATTR, packMessages } from '../outbox/commits.js';
import type { OutboxItem } from '../outbox/outbox.js';

/**
 * How a transaction item carries its creation events (shared/domain/consent/carried.ts): a new
 * transaction's item is the outbox carrier of its commit, and while its events are exactly those
 * its records imply it holds only the relay's keys (`derived`), the relay rebuilding the events
 * from the item (`deriveCreationMessages`). Its first change packs them (`packCreation`), since
 * the item then no longer says what they were.
 */

/** Kafka message for an event: keyed by app and principal so one principal stays in order. */
export function toOutboxItem(e: ConsentEvent, topic: string): OutboxItem {
  return {
    id: e.id,
    topic,
    key: `${e.appId}:${e.data.referenceId}`,
    value: JSON.stringify(e),
    createdAtMs: Date.parse(e.createdAt),
  };
}

/**
 * The messages of a transaction item written as a derived carrier (outbox.ts, `commit`), for the
 * relay: undefined unless the item is still the transaction as created (version 1, its
 * environment kept). A later version holds its creation's messages packed.
 */
export function deriveCreationMessages(
  item: Record<string, unknown>,
  o: { topic: string; baseUrl: string },
): OutMessage[] | undefined {
  const t = item as unknown as StoredTransaction;
  if (t.version !== 1 || (t.environment !== 'sandbox' && t.environment !== 'live'))
    return undefined;
  if (!Array.isArray(t.records) || typeof t.createdAt !== 'string') return undefined;
  return creationEvents(withFullRecords(t), t.environment, o.baseUrl.replace(/\/+$/, '')).map(
    (e) => {
      const m = toOutboxItem(e, o.topic);
      return { topic: m.topic, key: m.key, value: m.value, headers: {} };
    },
  );
}

/** Whether a stored transaction carries its creation events only as derivable (not packed). */
export function carriesDerived(t: object): boolean {
  const item = t as Record<string, unknown>;
  return item[ATTR.at] !== undefined && item[ATTR.packed] === undefined && item.version === 1;
}

/**
 * The attributes that keep a transaction's creation events once it changes: its creation
 * messages packed, while `current` (as loaded) carries them only as derivable; none otherwise.
 */
export function packCreation(
  current: StoredTransaction,
  o: { topic: string; baseUrl: string },
): Record<string, Uint8Array> {
  if (!carriesDerived(current)) return {};
  const messages = deriveCreationMessages(current as unknown as Record<string, unknown>, o);
  return messages ? { [ATTR.packed]: packMessages(messages) } : {};
}
