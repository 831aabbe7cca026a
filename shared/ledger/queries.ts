import { AppError } from '../errors.js';
import type { WithLedger } from './port.js';
import type { DeliveryStatus } from '../domain/ledger/delivery.js';
import {
  creationOf,
  toAttempt,
  toDispatch,
  type AttemptEntry,
  type Dispatch,
  isDispatchHead,
  DISPATCH_SK,
} from '../storage/ledger/dispatches.js';
import { checkChain, storedEntries } from './evidence.js';
import {
  toFlagChange,
  toFlagEntry,
  type FlagChange,
  type FlagEntry,
} from '../storage/ledger/flag-entries.js';
import { toPostback, type PostbackEntry } from '../storage/ledger/postbacks.js';

export type DispatchWithAttempts = Dispatch & {
  /**
   * The event's `data.sequence`, read from the body the dispatch sends; null when that body
   * cannot be read (packed.ts, `packedUnreadable`).
   */
  sequence: number | null;
  attempts: Omit<AttemptEntry, 'type'>[];
  /** Postbacks accepted for the dispatch, by receipt time. */
  postbacks: Omit<PostbackEntry, 'type'>[];
  /** Every change of its compliance flag, oldest first. */
  flagHistory: Pick<FlagChange, 'flag' | 'at' | 'cause'>[];
  /** The same changes as chained entries (seq, previous, prevHash, hash): what the export holds. */
  flagEntries: Omit<FlagEntry, 'type'>[];
};

const entriesOf = (items: Record<string, unknown>[], prefix: string) =>
  items.filter((i) => String(i.sk).startsWith(prefix));

/** `data.sequence` of a stored webhook body, or null when it holds none. */
export function sequenceOf(body: unknown): number | null {
  if (typeof body !== 'string') return null;
  try {
    const s = (JSON.parse(body) as { data?: { sequence?: unknown } } | null)?.data?.sequence;
    return typeof s === 'number' ? s : null;
  } catch {
    return null;
  }
}

/** One dispatch with its attempts, postbacks and flag history; undefined when unknown. */
export async function getDispatch(
  rt: WithLedger,
  dispatchId: string,
): Promise<DispatchWithAttempts | undefined> {
  const items = await rt.ledger.dispatchItems(dispatchId);
  const head = items[0];
  if (!head || !isDispatchHead(head)) return undefined;
  return {
    ...toDispatch(head),
    sequence: sequenceOf(head.body),
    attempts: entriesOf(items, 'ATT#').map(toAttempt),
    postbacks: entriesOf(items, 'PB#').map(toPostback),
    // The sk is `FLAG#{at}#{seq}` with `at` never going back: sort order is change order.
    flagHistory: entriesOf(items, 'FLAG#').map(toFlagChange),
    flagEntries: entriesOf(items, 'FLAG#').map(toFlagEntry),
  };
}

export type ChainCheck = { ok: true; entries: number } | { ok: false; at: string; reason: string };

/**
 * Recomputes a dispatch's hash chain from its stored entries (see evidence.ts `checkChain`).
 * This is the chain alone: the head fields and the signed checkpoints are checked by
 * verify.ts.
 */
export async function verifyDispatchChain(rt: WithLedger, dispatchId: string): Promise<ChainCheck> {
  const items = await rt.ledger.dispatchItems(dispatchId);
  const head = items[0];
  if (!head || !isDispatchHead(head))
    return { ok: false, at: DISPATCH_SK, reason: 'unknown dispatch' };
  const entries = storedEntries(items.slice(1));
  const r = checkChain({ ...creationOf(head) }, head.entryHash, entries, head.headHash);
  return r.ok ? { ok: true, entries: items.length } : r;
}

export interface ListOptions {
  /** ISO times on the event's createdAt: from inclusive, to exclusive. */
  from?: string | undefined;
  to?: string | undefined;
  limit?: number | undefined;
  cursor?: string | undefined;
  order?: 'asc' | 'desc' | undefined;
  event?: string | undefined;
  deliveryStatus?: DeliveryStatus | undefined;
  complianceFlag?: string | undefined;
}

export interface Page {
  items: Dispatch[];
  nextCursor: string | null;
}

const encodeCursor = (k: Record<string, unknown> | undefined) =>
  k ? Buffer.from(JSON.stringify(k)).toString('base64url') : null;

function decodeCursor(c: string | undefined): Record<string, unknown> | undefined {
  if (!c) return undefined;
  try {
    const v: unknown = JSON.parse(Buffer.from(c, 'base64url').toString('utf8'));
    if (v && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {
    // fall through
  }
  throw new AppError('SVC_VALIDATION_FAILED', 'The cursor is not valid', {
    errors: [{ path: '/cursor', message: 'not a cursor returned by this API' }],
  });
}

/**
 * An app's dispatches by event time (oldest first unless `order: 'desc'`): `gsi1` and the
 * carriers (app-pages.ts).
 */
export async function listDispatchesByApp(
  rt: WithLedger,
  appId: string,
  o: ListOptions = {},
): Promise<Page> {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  const filters: string[] = [];
  const wanted: [string, unknown][] = [
    ['event', o.event],
    ['deliveryStatus', o.deliveryStatus],
    ['complianceFlag', o.complianceFlag],
  ];
  for (const [attr, value] of wanted) {
    if (value === undefined) continue;
    names[`#${attr}`] = attr;
    values[`:${attr}`] = value;
    filters.push(`#${attr} = :${attr}`);
  }
  const after = decodeCursor(o.cursor)?.gsi1sk;
  const page = await rt.ledger.readAppDispatches({
    appId,
    from: o.from ?? '0000',
    to: o.to ?? '9999',
    after: typeof after === 'string' ? after : undefined,
    desc: o.order === 'desc',
    want: Math.min(Math.max(o.limit ?? 50, 1), 1000),
    ...(filters.length
      ? {
          filter: {
            FilterExpression: filters.join(' AND '),
            ExpressionAttributeNames: names,
            ExpressionAttributeValues: values,
          },
          keep: (d: Record<string, unknown>) =>
            wanted.every(([a, v]) => v === undefined || d[a] === v),
        }
      : {}),
  });
  return { items: page.items.map(toDispatch), nextCursor: encodeCursor(page.next) };
}

/**
 * One principal's dispatches within an app, by event time (principal.ts: those of `gsi2` and
 * those found through its consents), with the filters and cursor of `listDispatchesByApp`.
 */
export async function listDispatchesByReference(
  rt: WithLedger,
  appId: string,
  referenceId: string,
  o: ListOptions = {},
): Promise<Page> {
  const desc = o.order === 'desc';
  const after = decodeCursor(o.cursor)?.gsi2sk;
  const from = o.from ?? '0000';
  const to = o.to ?? '9999';
  const all = (await rt.ledger.principalDispatches(appId, referenceId)).filter((d) => {
    const key = String(d.gsi2sk);
    if (key < from || key > to) return false;
    if (typeof after === 'string' && (desc ? key >= after : key <= after)) return false;
    if (o.event !== undefined && d.event !== o.event) return false;
    if (o.deliveryStatus !== undefined && d.deliveryStatus !== o.deliveryStatus) return false;
    return o.complianceFlag === undefined || d.complianceFlag === o.complianceFlag;
  });
  if (desc) all.reverse();
  const items = all.slice(0, Math.min(Math.max(o.limit ?? 50, 1), 1000));
  const last = items[items.length - 1];
  return {
    items: items.map(toDispatch),
    nextCursor:
      all.length > items.length && last
        ? encodeCursor({ pk: last.pk, sk: last.sk, gsi2pk: last.gsi2pk, gsi2sk: last.gsi2sk })
        : null,
  };
}
