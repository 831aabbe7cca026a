/**
 * What AWS DynamoDB (on demand) would bill for a write request, from the request alone, by its
 * published rules: a standard write costs one unit per started kilobyte of the item, a
 * transactional one two; each global secondary index the item is written to costs one unit per
 * started kilobyte of its projection (keys only: the table's and the index's keys). DynamoDB
 * Local reports a `TransactWriteItems` as two units per kilobyte of its largest item per table,
 * and no index writes, so on the embedded stack this model is the figure to read for cost.
 *
 * Exact for puts (their whole item is in the request). An update or a delete does not carry
 * the item's size, so it is counted as one started kilobyte and no index write: a floor. Sizes
 * follow DynamoDB's item size rules (attribute names plus values; numbers about one byte per
 * two digits; lists and maps three bytes plus one per element).
 */

export interface IndexShape {
  partitionKey: string;
  sortKey?: string;
  keysOnly?: boolean;
  include?: readonly string[];
}

export interface TableShape {
  keys: readonly string[];
  indexes: readonly IndexShape[];
}

type AttributeValue = Record<string, unknown>;
const AV_TYPES = new Set(['S', 'N', 'B', 'BOOL', 'NULL', 'L', 'M', 'SS', 'NS', 'BS']);

/** A low-level AttributeValue ({ S: 'x' }), as the client's middleware sees the request. */
function isAttributeValue(v: unknown): v is AttributeValue {
  if (typeof v !== 'object' || v === null || Array.isArray(v) || v instanceof Uint8Array)
    return false;
  const k = Object.keys(v);
  return k.length === 1 && AV_TYPES.has(k[0]!);
}

const numberBytes = (n: string) =>
  Math.ceil(n.replace(/^-/, '').replace('.', '').replace(/^0+/, '').length / 2) + 1;

function valueBytes(v: unknown): number {
  if (isAttributeValue(v)) {
    const [t, x] = Object.entries(v)[0]!;
    switch (t) {
      case 'S':
        return Buffer.byteLength(String(x));
      case 'N':
        return numberBytes(String(x));
      case 'B':
        return (x as Uint8Array).byteLength;
      case 'BOOL':
      case 'NULL':
        return 1;
      case 'L':
        return 3 + (x as unknown[]).reduce<number>((n, e) => n + 1 + valueBytes(e), 0);
      case 'M':
        return 3 + mapBytes(x as Record<string, unknown>, 1);
      case 'SS':
        return (x as string[]).reduce((n, e) => n + Buffer.byteLength(e), 0);
      case 'NS':
        return (x as string[]).reduce((n, e) => n + numberBytes(e), 0);
      default:
        return (x as Uint8Array[]).reduce((n, e) => n + e.byteLength, 0);
    }
  }
  if (v === null || v === undefined || typeof v === 'boolean') return 1;
  if (typeof v === 'string') return Buffer.byteLength(v);
  if (typeof v === 'number' || typeof v === 'bigint') return numberBytes(String(v));
  if (v instanceof Uint8Array) return v.byteLength;
  if (v instanceof Set)
    return [...(v as Set<unknown>)].reduce<number>((n, e) => n + valueBytes(e), 0);
  if (Array.isArray(v)) return 3 + v.reduce<number>((n, e) => n + 1 + valueBytes(e), 0);
  if (typeof v === 'object') return 3 + mapBytes(v as Record<string, unknown>, 1);
  return 1;
}

function mapBytes(m: Record<string, unknown>, perEntry = 0): number {
  let n = 0;
  for (const [k, v] of Object.entries(m)) n += Buffer.byteLength(k) + perEntry + valueBytes(v);
  return n;
}

/** An item's size in bytes by DynamoDB's rules (either the document or the low-level form). */
export const itemBytes = (item: Record<string, unknown>) => mapBytes(item);

const kb = (bytes: number) => Math.max(1, Math.ceil(bytes / 1024));

function pick(item: Record<string, unknown>, names: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const n of names) if (n in item) out[n] = item[n];
  return out;
}

/** Units a put of `item` costs in its table and its indexes (`transactional`: base doubled). */
export function putUnits(
  item: Record<string, unknown>,
  shape: TableShape | undefined,
  transactional: boolean,
): number {
  const size = itemBytes(item);
  let units = kb(size) * (transactional ? 2 : 1);
  for (const ix of shape?.indexes ?? []) {
    if (!(ix.partitionKey in item) || (ix.sortKey !== undefined && !(ix.sortKey in item))) continue;
    const keyNames = [...shape!.keys, ix.partitionKey, ...(ix.sortKey ? [ix.sortKey] : [])];
    const projected = ix.keysOnly
      ? pick(item, keyNames)
      : ix.include
        ? pick(item, [...keyNames, ...ix.include])
        : item;
    units += kb(itemBytes(projected));
  }
  return units;
}

interface WriteRequest {
  TableName?: string;
  Item?: Record<string, unknown>;
  TransactItems?: Record<
    string,
    { TableName?: string; Item?: Record<string, unknown> } | undefined
  >[];
  RequestItems?: Record<string, { PutRequest?: { Item?: Record<string, unknown> } }[]>;
}

/**
 * The units AWS would bill for one write request, per table (see the module comment). Only
 * items that were written count: a batch's unprocessed items are left out by the caller.
 */
export function billedUnits(
  command: string,
  input: unknown,
  shapeOf: (table: string) => TableShape | undefined,
): Map<string, number> {
  const out = new Map<string, number>();
  const add = (t: string | undefined, n: number) =>
    out.set(t ?? 'unknown', (out.get(t ?? 'unknown') ?? 0) + n);
  const i = input as WriteRequest;
  if (command === 'TransactWriteItemsCommand') {
    for (const t of i.TransactItems ?? []) {
      if (t.Put)
        add(t.Put.TableName, putUnits(t.Put.Item ?? {}, shapeOf(t.Put.TableName ?? ''), true));
      // A condition check is billed like a write of the item it reads.
      for (const kind of ['Update', 'Delete', 'ConditionCheck'] as const)
        if (t[kind]) add(t[kind].TableName, 2);
    }
  } else if (command === 'BatchWriteItemCommand') {
    for (const [table, reqs] of Object.entries(i.RequestItems ?? {}))
      for (const r of reqs)
        add(table, r.PutRequest?.Item ? putUnits(r.PutRequest.Item, shapeOf(table), false) : 1);
  } else if (command === 'PutItemCommand') {
    add(i.TableName, putUnits(i.Item ?? {}, shapeOf(i.TableName ?? ''), false));
  } else add(i.TableName, 1);
  return out;
}
