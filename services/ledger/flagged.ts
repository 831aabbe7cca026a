import type { ComplianceFlag } from '../../shared/domain/compliance/flags.js';
import {
  keyAfter,
  indexOf,
  readDispatchPage,
  type DispatchPage,
  type DispatchQuery,
  type PageRequest,
} from '../../shared/ledger/export.js';
import type { Runtime } from '../../shared/runtime.js';

/**
 * `?flag=X` on the dispatch list matches a dispatch whose current flag is X OR whose worst
 * flag ever (`worstFlag`) is X, so an auditor asking for `critical` also finds a dispatch that
 * was critical and has since been answered `ok`. `none` still means "no flag now" (a flag never
 * returns to none). A dispatch flagged before `worstFlag` existed matches by its current flag
 * until the compliance worker next writes it.
 */
export function matchesFlag(item: Record<string, unknown>, flag: ComplianceFlag): boolean {
  return item.complianceFlag === flag || item.worstFlag === flag;
}

/** Items read per DynamoDB call while looking for matches. */
const CHUNK = 100;

/**
 * One page of the list. Without a flag (or with `none`) this is `readDispatchPage`; with a
 * flag the range is read in chunks and matched here (one DynamoDB filter cannot say "either
 * attribute"), under the same `maxEvaluated` bound: a page may come back short, even empty,
 * with a key that moves forward.
 */
export async function readListPage(
  rt: Runtime,
  q: DispatchQuery,
  r: PageRequest,
): Promise<DispatchPage> {
  const flag = q.flag;
  if (flag === undefined || flag === null) return readDispatchPage(rt, q, r);
  const { index } = indexOf(q);
  const items: Record<string, unknown>[] = [];
  let start = r.startKey;
  let evaluated = 0;
  for (;;) {
    const budget = r.maxEvaluated - evaluated;
    const chunk = await readDispatchPage(
      rt,
      { ...q, flag: undefined },
      {
        startKey: start,
        limit: Math.max(1, Math.min(CHUNK, budget)),
        maxEvaluated: budget,
        signal: r.signal,
      },
    );
    evaluated += chunk.items.length;
    for (const item of chunk.items) {
      if (!matchesFlag(item, flag)) continue;
      items.push(item);
      if (items.length === r.limit) {
        // Stop right after this match; the rest of the chunk is read again by the next page.
        const last = chunk.items.at(-1);
        return {
          items,
          nextKey: item === last ? chunk.nextKey : keyAfter(item, index),
        };
      }
    }
    start = chunk.nextKey;
    if (!start) return { items, nextKey: undefined };
    if (evaluated >= r.maxEvaluated) return { items, nextKey: start };
  }
}
