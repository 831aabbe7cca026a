import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { changeKeys } from '../../shared/storage/ledger/changes.js';
import { attemptSk, dispatchItems, dispatchPk } from '../../shared/storage/ledger/dispatches.js';
import { chainHash } from '../../shared/domain/ledger/hash.js';
import { PACKED_ATTR, packDispatch, unpackDispatch } from '../../shared/storage/ledger/packed.js';
import { RETAIN_ATTR } from '../../shared/domain/ledger/retention.js';
import { factOf, worstOf, type PostbackFact } from '../../shared/storage/ledger/summary.js';
import type { Runtime } from '../../shared/runtime.js';
import { viewEntries, type DispatchView } from '../../shared/ledger/evidence.js';

/**
 * Changes one field of a dispatch's first attempt where it is stored: its own `ATT#001` item,
 * or the dispatch item's packed attribute when the dispatch was created with it
 * (shared/storage/ledger/packed.ts). What an attacker with write access to the table could do;
 * verification must notice.
 */
export async function tamperFirstAttempt(
  rt: Runtime,
  dispatchId: string,
  field: string,
  value: unknown,
): Promise<void> {
  const pk = dispatchPk(dispatchId);
  const own = await rt.dynamo.doc.send(
    new GetCommand({ TableName: rt.tables.ledger, Key: { pk, sk: attemptSk(1) } }),
  );
  if (own.Item) {
    await rt.dynamo.doc.send(
      new UpdateCommand({
        TableName: rt.tables.ledger,
        Key: { pk, sk: attemptSk(1) },
        UpdateExpression: 'SET #f = :v',
        ExpressionAttributeNames: { '#f': field },
        ExpressionAttributeValues: { ':v': value },
      }),
    );
    return;
  }
  const head = (
    await rt.dynamo.doc.send(
      new GetCommand({ TableName: rt.tables.ledger, Key: { pk, sk: 'DSP' } }),
    )
  ).Item;
  if (!head) throw new Error(`no dispatch ${dispatchId}`);
  const full = unpackDispatch(head);
  const attempt = { ...(full.firstAttempt as Record<string, unknown>), [field]: value };
  await setPacked(rt, pk, packDispatch({ ...full, firstAttempt: attempt })[PACKED_ATTR]);
}

async function setPacked(rt: Runtime, pk: unknown, z: unknown): Promise<void> {
  await rt.dynamo.doc.send(
    new UpdateCommand({
      TableName: rt.tables.ledger,
      Key: { pk, sk: 'DSP' },
      UpdateExpression: 'SET #z = :z',
      ExpressionAttributeNames: { '#z': PACKED_ATTR },
      ExpressionAttributeValues: { ':z': z },
    }),
  );
}

/*
 * A deliberate tamperer with write access to the ledger table: changes that keep each
 * dispatch's hash chain consistent on its own (hashes recomputed, head moved), which is what
 * an unkeyed chain cannot catch. Only the signed checkpoints and the head-field checks can.
 */

type Item = Record<string, unknown>;

/** A dispatch's head item and its entries in chain order (each as stored, keys included). */
async function chainOf(rt: Runtime, dispatchId: string): Promise<{ head: Item; entries: Item[] }> {
  const items = await dispatchItems(rt, dispatchId);
  const head = items[0];
  if (!head || head.sk !== 'DSP') throw new Error(`no dispatch ${dispatchId}`);
  const byPrev = new Map(items.slice(1).map((i) => [String(i.prevHash), i]));
  const entries: Item[] = [];
  for (let e = byPrev.get(String(head.entryHash)); e; e = byPrev.get(String(e.hash)))
    entries.push(e);
  return { head, entries };
}

/**
 * Stores `entries` as the dispatch's whole chain, each re-hashed onto the one before it, drops
 * the stored entries not among them, and moves the head (headHash and the fields derived from
 * the entries) to match. `touch` also stamps the change index as a real write would, so the
 * checkpoint sealer looks at the dispatch again.
 */
async function rewriteChain(
  rt: Runtime,
  head: Item,
  before: Item[],
  entries: Item[],
  touch: boolean,
): Promise<void> {
  const T = rt.tables.ledger;
  let prev = String(head.entryHash);
  const kept = new Set<string>();
  for (const e of entries) {
    // The TTL is stored beside the entry, outside what its hash covers (see storedEntries).
    const { pk, sk, hash: _hash, [RETAIN_ATTR]: ttl, ...body } = e;
    body.prevHash = prev;
    prev = chainHash(prev, body);
    kept.add(String(sk));
    await rt.dynamo.doc.send(
      new PutCommand({ TableName: T, Item: { ...body, hash: prev, pk, sk, [RETAIN_ATTR]: ttl } }),
    );
  }
  for (const e of before)
    if (!kept.has(String(e.sk)))
      await rt.dynamo.doc.send(new DeleteCommand({ TableName: T, Key: { pk: e.pk, sk: e.sk } }));
  const attempts = entries.filter((e) => e.type === 'attempt');
  const flags = entries.filter((e) => e.type === 'flag');
  const lastAttempt = attempts.at(-1);
  const values: Item = {
    ':head': prev,
    ':flag': flags.at(-1)?.flag ?? null,
    // The compliance worker's summary of the entries (summary.ts), kept consistent too.
    ':worst': worstOf(flags.map((e) => e.flag)),
    ':facts': entries
      .filter((e) => e.type === 'postback')
      .map((e) => factOf(e as unknown as PostbackFact)),
    ':flags': flags.length,
    ':n': attempts.length,
    ':status': lastAttempt?.deliveryStatus ?? 'pending',
    ':last': lastAttempt?.time ?? null,
  };
  let update =
    'SET headHash = :head, complianceFlag = :flag, flagCount = :flags, attempts = :n, deliveryStatus = :status, lastAttemptAt = :last, worstFlag = :worst, postbackFacts = :facts';
  if (touch) {
    const keys = changeKeys(
      head as { dispatchId: string; appId: string; createdAt: string },
      Date.now(),
      rt.config.LEDGER_CHECKPOINT_PERIOD_MS,
    );
    update += ', gsi3pk = :cpk, gsi3sk = :csk';
    Object.assign(values, { ':cpk': keys.gsi3pk, ':csk': keys.gsi3sk });
  }
  // The first attempt lives inside the head item's packed attribute (shared/storage/ledger/packed.ts):
  // it is now a stored entry of its own, the body packed alone.
  update += ', #z = :z';
  values[':z'] = packDispatch(head)[PACKED_ATTR];
  await rt.dynamo.doc.send(
    new UpdateCommand({
      TableName: T,
      Key: { pk: head.pk, sk: 'DSP' },
      UpdateExpression: update,
      ExpressionAttributeNames: { '#z': PACKED_ATTR },
      ExpressionAttributeValues: values,
    }),
  );
}

/** Deletes the newest `n` entries of a dispatch and moves its head back to match. */
export async function deleteNewestEntries(
  rt: Runtime,
  dispatchId: string,
  n: number,
  o: { touch?: boolean } = {},
): Promise<void> {
  const { head, entries } = await chainOf(rt, dispatchId);
  await rewriteChain(rt, head, entries, entries.slice(0, -n), o.touch ?? false);
}

/** Changes the flag of the dispatch's last flag entry, re-chaining the entries and the head. */
export async function rewriteLastFlag(rt: Runtime, dispatchId: string, flag: string) {
  const { head, entries } = await chainOf(rt, dispatchId);
  const last = entries.map((e) => e.type).lastIndexOf('flag');
  if (last < 0) throw new Error(`dispatch ${dispatchId} has no flag entry`);
  const changed = entries.map((e, i) => (i === last ? { ...e, flag } : e));
  await rewriteChain(rt, head, entries, changed, false);
}

/** Sets one field of the dispatch item, nothing else. */
export async function setHeadField(rt: Runtime, dispatchId: string, field: string, value: unknown) {
  await rt.dynamo.doc.send(
    new UpdateCommand({
      TableName: rt.tables.ledger,
      Key: { pk: dispatchPk(dispatchId), sk: 'DSP' },
      UpdateExpression: 'SET #f = :v',
      ConditionExpression: 'attribute_exists(pk)',
      ExpressionAttributeNames: { '#f': field },
      ExpressionAttributeValues: { ':v': value },
    }),
  );
}

/** Deletes every item of a dispatch: as if it had never been. */
export async function dropDispatch(rt: Runtime, dispatchId: string): Promise<void> {
  for (const i of await dispatchItems(rt, dispatchId))
    await rt.dynamo.doc.send(
      new DeleteCommand({ TableName: rt.tables.ledger, Key: { pk: i.pk, sk: i.sk } }),
    );
}

/*
 * A hostile exporter: edits an export file (NDJSON, services/ledger/stream.ts) before handing
 * it to an auditor, keeping each dispatch's chain consistent on its own. Only the signed
 * checkpoints and the signed summary line can give it away.
 */

type Line = Record<string, unknown>;

export const exportLines = (text: string): Line[] =>
  text
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Line);

export const exportText = (lines: readonly Line[]) =>
  `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`;

/** Drops every checkpoint line. */
export const dropCheckpointLines = (text: string) =>
  exportText(exportLines(text).filter((l) => l.type !== 'checkpoint'));

/** Drops the summary line (the last line). */
export const dropSummary = (text: string) => exportText(exportLines(text).slice(0, -1));

/** Sets fields of the summary line (`undefined` removes one), leaving its signature as it was. */
export function editSummary(text: string, fields: Record<string, unknown>): string {
  const lines = exportLines(text);
  const summary = { ...lines.at(-1)!, ...fields };
  for (const [k, v] of Object.entries(fields)) if (v === undefined) delete summary[k];
  return exportText([...lines.slice(0, -1), summary]);
}

/**
 * Changes the last `kind` entry (postbacks or flagEntries) of a dispatch line, then re-hashes
 * the dispatch's chain from there (hash and prevHash of each later entry, and headHash), and
 * moves the head fields a flag decides (complianceFlag, worstFlag, flagHistory) to match.
 */
export function rewriteExportedEntry(
  text: string,
  dispatchId: string,
  kind: 'postbacks' | 'flagEntries',
  change: Record<string, unknown>,
): string {
  const lines = exportLines(text);
  const d = lines.find((l) => l.type === 'dispatch' && l.dispatchId === dispatchId) as
    (DispatchView & Line) | undefined;
  if (!d) throw new Error(`no dispatch line ${dispatchId}`);
  const target = (d[kind] as Line[]).length - 1;
  if (target < 0) throw new Error(`dispatch ${dispatchId} has no ${kind}`);
  Object.assign(d[kind][target]!, change);
  if (kind === 'flagEntries' && typeof change.flag === 'string') {
    (d.flagHistory as Line[])[target]!.flag = change.flag;
    d.complianceFlag = change.flag;
    if ('worstFlag' in d) d.worstFlag = change.flag;
  }
  // Walk the old links (each entry's old hash names the next), re-hashing each entry's body.
  const byPrev = new Map(viewEntries(d).map((e) => [String(e.body.prevHash), e]));
  let prev = d.entryHash;
  for (let e = byPrev.get(prev); e; e = byPrev.get(e.hash)) {
    const [, arr, i] = /^(\w+)\[(\d+)\]$/.exec(e.label)!;
    const entry = (d[arr as 'attempts'] as Line[])[Number(i)]!;
    entry.prevHash = prev;
    entry.hash = chainHash(prev, { ...e.body, prevHash: prev });
    prev = String(entry.hash);
  }
  d.headHash = prev;
  return exportText(lines);
}
