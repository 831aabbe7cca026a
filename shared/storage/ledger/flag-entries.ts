import { z } from 'zod';
import type { ComplianceFlag, FlagCause } from '../../domain/compliance/flags.js';
import { POSTBACK_WINDOW_MS, type EventType } from '../../domain/consent/events.js';
import type { TransactItem } from '../outbox/outbox.js';
import type { LedgerDeps } from './deps.js';
import { queryAll } from '../query.js';
import { shardOf, timerKey, type TimerEntry } from '../timers/due.js';
import { chainHash } from '../../domain/ledger/hash.js';
import { RETAIN_ATTR } from '../../domain/ledger/retention.js';

/**
 * Flag entries of the dispatch ledger, the SLA checks that drive them and the counters behind
 * the compliance gauges. Flag entries (sk `FLAG#{at}#{seq}`) sit in the dispatch's partition,
 * chained like every other entry; only the compliance worker writes them.
 */

export const flagSk = (at: string, seq: number) => `FLAG#${at}#${String(seq).padStart(4, '0')}`;

/** One change of a dispatch's flag, as kept in its history. */
export interface FlagChange {
  flag: ComplianceFlag;
  previous: ComplianceFlag | null;
  /** ISO time the flag changed: a deadline passing, or a postback's arrival. */
  at: string;
  cause: FlagCause;
}

export interface FlagEntry extends FlagChange {
  type: 'flag';
  dispatchId: string;
  /** 1 for the first change; orders changes made at the same instant. */
  seq: number;
  prevHash: string;
  hash: string;
}

/** Chains entry bodies after `head`, in order; returns them with their hashes and the new head. */
export function chainAfter<T extends { prevHash: string }>(
  head: string,
  bodies: Omit<T, 'prevHash' | 'hash'>[],
): { entries: (T & { hash: string })[]; head: string } {
  const entries: (T & { hash: string })[] = [];
  let prev = head;
  for (const b of bodies) {
    const body = { ...b, prevHash: prev } as unknown as T;
    const hash = chainHash(prev, body);
    entries.push({ ...body, hash });
    prev = hash;
  }
  return { entries, head: prev };
}

/** A flag entry as chained (storage keys and the entry type removed): what an export carries. */
export function toFlagEntry(item: Record<string, unknown>): Omit<FlagEntry, 'type'> {
  const { pk: _pk, sk: _sk, type: _type, [RETAIN_ATTR]: _ttl, ...entry } = item;
  return entry as unknown as Omit<FlagEntry, 'type'>;
}

export function toFlagChange(
  item: Record<string, unknown>,
): Pick<FlagChange, 'flag' | 'at' | 'cause'> {
  return {
    flag: item.flag as ComplianceFlag,
    at: String(item.at),
    cause: item.cause as FlagCause,
  };
}

// ---- SLA checks ----

/**
 * The message the timers worker puts on the postbacks topic (keyed by dispatchId, so it stays
 * in order with the dispatch's postbacks) when an SLA check is due: the compliance worker
 * recomputes the flag at `at` (or its own clock, if later) and schedules the next check.
 */
export const slaCheckMessage = z.object({
  type: z.literal('sla.check'),
  dispatchId: z.string(),
  at: z.string(),
});
export type SlaCheckMessage = z.infer<typeof slaCheckMessage>;

export interface SlaCheckEntry extends TimerEntry {
  kind: 'sla';
  dispatchId: string;
  appId: string;
}

/** The `sla#` due entry that makes the timers worker ask for a check of `dispatchId`. */
export function slaCheckEntry(
  dispatchId: string,
  appId: string,
  dueAtMs: number,
  shards: number,
): SlaCheckEntry {
  return { ...timerKey('sla', dispatchId, dueAtMs, shards), kind: 'sla', dispatchId, appId };
}

// ---- gauge counters ----

/**
 * The compliance gauges are counts over all dispatches. Rather than scanning, the compliance
 * worker keeps them as counters it moves (ADD) in the same transaction as the dispatch state
 * they count, so they never drift from it. Each event's counters are split over a few items
 * (by dispatch id) so concurrent transactions rarely meet on one; a reader sums them.
 */
export const GAUGE_PK = 'GAUGE#compliance';
export const GAUGE_SHARDS = 16;

/** The events that need a postback: the label values of the gauges. */
export const POSTBACK_EVENTS = (Object.keys(POSTBACK_WINDOW_MS) as EventType[]).sort();

export interface GaugeDeltas {
  awaiting: number;
  near: number;
  unconfirmed: number;
}

/** The counter update for one dispatch's changes, or undefined when nothing moves. */
export function gaugeCounterItem(
  db: LedgerDeps,
  event: EventType,
  dispatchId: string,
  d: GaugeDeltas,
): TransactItem | undefined {
  const moves = (Object.entries(d) as [keyof GaugeDeltas, number][]).filter(([, v]) => v !== 0);
  if (moves.length === 0) return undefined;
  return {
    Update: {
      TableName: db.tables.ledger,
      Key: { pk: GAUGE_PK, sk: `${event}#${shardOf(dispatchId, GAUGE_SHARDS)}` },
      UpdateExpression: `ADD ${moves.map(([k]) => `#${k} :${k}`).join(', ')}`,
      ExpressionAttributeNames: Object.fromEntries(moves.map(([k]) => [`#${k}`, k])),
      ExpressionAttributeValues: Object.fromEntries(moves.map(([k, v]) => [`:${k}`, v])),
    },
  };
}

export type GaugeTotals = Record<string, GaugeDeltas>;

/** The counters summed per event (every postback event present, zero when unseen). */
export async function readGauges(db: LedgerDeps): Promise<GaugeTotals> {
  const out: GaugeTotals = Object.fromEntries(
    POSTBACK_EVENTS.map((e) => [e, { awaiting: 0, near: 0, unconfirmed: 0 }]),
  );
  const items = await queryAll(db.dynamo.doc, {
    TableName: db.tables.ledger,
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': GAUGE_PK },
    ConsistentRead: true,
  });
  for (const i of items) {
    const event = String(i.sk).split('#')[0]!;
    const t = (out[event] ??= { awaiting: 0, near: 0, unconfirmed: 0 });
    t.awaiting += Number(i.awaiting ?? 0);
    t.near += Number(i.near ?? 0);
    t.unconfirmed += Number(i.unconfirmed ?? 0);
  }
  return out;
}
