import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { FLAGS, worstFlag, type ComplianceFlag } from '../../domain/compliance/flags.js';
import type { PostbackMessage } from '../../domain/compliance/postback.js';
import type { TransactItem } from '../outbox/outbox.js';
import type { LedgerDeps } from './deps.js';
import { impliedFields } from './packed.js';
import { dispatchItems, type DispatchRecord, dispatchKey, isDispatchHead } from './dispatches.js';

/**
 * What the compliance worker needs of a dispatch's postbacks and flags, kept in the dispatch
 * item itself so that recording a postback costs one read of one item, not a read of every
 * entry (attempts, postbacks, flags) the dispatch has:
 *
 * - `postbackFacts`: per recorded postback its id, status, risk and receipt time (the flag
 *   rules need nothing else), written in the same transaction as the postback entry, so it
 *   always lists exactly the recorded postbacks;
 * - `worstFlag`: the most severe flag the dispatch ever had (`ok < at_risk < breach <
 *   unconfirmed_erasure < critical`), which the ledger API's `?flag=` filter also matches;
 * - `postbacksAccepted`: how many postbacks the postback API accepted for the dispatch
 *   (counted when it accepts one, before the worker records it), capped by
 *   POSTBACK_MAX_PER_DISPATCH.
 *
 * The dispatcher writes a dispatch item without them: the compliance worker reads it in full
 * once, and its first write stores the summary.
 */

export type PostbackFact = Pick<PostbackMessage, 'postbackId' | 'status' | 'risk' | 'receivedAt'>;

export const factOf = (m: PostbackFact): PostbackFact => ({
  postbackId: m.postbackId,
  status: m.status,
  risk: m.risk,
  receivedAt: m.receivedAt,
});

const isFlag = (v: unknown): v is ComplianceFlag => (FLAGS as readonly unknown[]).includes(v);

/** The most severe of these flags; null when none is a flag. */
export function worstOf(flags: readonly unknown[]): ComplianceFlag | null {
  return flags.filter(isFlag).reduce<ComplianceFlag | null>((w, f) => worstFlag(w, f), null);
}

export interface ComplianceState {
  head: DispatchRecord & Record<string, unknown>;
  postbacks: PostbackFact[];
  /** Flag entries so far, and the time of the last one. */
  flagCount: number;
  lastFlagAt: string | undefined;
  worstFlag: ComplianceFlag | null;
  /** False for an item the compliance worker has not written yet: its next write stores it. */
  summaryStored: boolean;
}

/**
 * The dispatch as the compliance worker plans from it: one consistent read of the dispatch
 * item, or (for an item without the summary) of all its items. Undefined when unknown.
 */
export async function readComplianceState(
  db: LedgerDeps,
  dispatchId: string,
): Promise<ComplianceState | undefined> {
  const r = await db.dynamo.doc.send(
    new GetCommand({
      TableName: db.tables.ledger,
      Key: dispatchKey(dispatchId),
      ConsistentRead: true,
    }),
  );
  const item = r.Item && (impliedFields(r.Item) as DispatchRecord & Record<string, unknown>);
  if (!item) return undefined;
  if (Array.isArray(item.postbackFacts)) {
    return {
      head: item,
      postbacks: (item.postbackFacts as PostbackFact[]).map(factOf),
      flagCount: Number(item.flagCount ?? 0),
      lastFlagAt: typeof item.flagAt === 'string' ? item.flagAt : undefined,
      worstFlag: isFlag(item.worstFlag) ? item.worstFlag : worstOf([item.complianceFlag]),
      summaryStored: true,
    };
  }
  const items = await dispatchItems(db, dispatchId);
  const head = items[0] as (DispatchRecord & Record<string, unknown>) | undefined;
  if (!head || !isDispatchHead(head)) return undefined;
  const entries = (prefix: string) => items.filter((i) => String(i.sk).startsWith(prefix));
  const flags = entries('FLAG#');
  return {
    head,
    postbacks: (entries('PB#') as unknown as PostbackFact[]).map(factOf),
    flagCount: flags.length,
    lastFlagAt: flags.length ? String(flags.at(-1)!.at) : undefined,
    worstFlag: worstOf([...flags.map((f) => f.flag), head.complianceFlag]),
    summaryStored: false,
  };
}

/**
 * The postback API's share of a postback's acceptance: one more accepted postback on the
 * dispatch item, in the transaction that also writes the postback's outbox item, refused
 * (condition failure) once `max` were accepted.
 */
export function acceptPostbackItem(db: LedgerDeps, dispatchId: string, max: number): TransactItem {
  return {
    Update: {
      TableName: db.tables.ledger,
      Key: dispatchKey(dispatchId),
      UpdateExpression: 'ADD postbacksAccepted :one',
      ConditionExpression:
        'attribute_exists(pk) AND (attribute_not_exists(postbacksAccepted) OR postbacksAccepted < :max)',
      ExpressionAttributeValues: { ':one': 1, ':max': max },
    },
  };
}
