import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import type { Runtime } from '../runtime.js';

/**
 * Whether a global secondary index a process would write to is there to be read: ACTIVE, as
 * `DescribeTable` shows it. On an existing table a new index is added at a start
 * (infra/definitions/apply.ts) and, on AWS, backfilled before it can be queried; a writer
 * keeps to the older layout until it has seen the index ACTIVE.
 */

/** How long a process waits before it asks again whether an index is ACTIVE. */
const RECHECK_MS = 30_000;

interface State {
  active: boolean;
  checkedAtMs: number;
  checking?: Promise<void>;
}
const states = new WeakMap<Runtime, Map<string, State>>();

async function check(rt: Runtime, table: string, index: string, s: State): Promise<void> {
  try {
    const r = await rt.dynamo.client.send(new DescribeTableCommand({ TableName: table }));
    s.active =
      r.Table?.GlobalSecondaryIndexes?.some(
        (i) => i.IndexName === index && i.IndexStatus === 'ACTIVE',
      ) ?? false;
  } catch (err) {
    rt.log.warn({ err, table, index }, 'could not read whether an index is active; asking again');
  } finally {
    s.checkedAtMs = Date.now();
  }
}

function stateOf(rt: Runtime, table: string, index: string): State {
  let byIndex = states.get(rt);
  if (!byIndex) {
    byIndex = new Map();
    states.set(rt, byIndex);
  }
  const key = `${table}|${index}`;
  let s = byIndex.get(key);
  if (!s) {
    s = { active: false, checkedAtMs: 0 };
    byIndex.set(key, s);
  }
  return s;
}

/**
 * Whether this process has seen `index` of `table` ACTIVE. Never waits: the first call (and one
 * every `RECHECK_MS` until it is) starts a check in the background and answers what is known,
 * false at first. Once seen ACTIVE it stays so (indexes are never removed).
 */
export function indexActive(rt: Runtime, table: string, index: string): boolean {
  const s = stateOf(rt, table, index);
  if (!s.active && !s.checking && Date.now() - s.checkedAtMs >= RECHECK_MS) {
    s.checking = check(rt, table, index, s).finally(() => {
      s.checking = undefined;
    });
  }
  return s.active;
}

/** `indexActive` once a check in flight has ended (the first call's included). */
export async function indexChecked(rt: Runtime, table: string, index: string): Promise<boolean> {
  indexActive(rt, table, index);
  await stateOf(rt, table, index).checking;
  return indexActive(rt, table, index);
}
