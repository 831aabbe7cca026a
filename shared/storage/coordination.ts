import { PROGRESS_PREFIX } from './outbox/commits.js';

/**
 * Writes that coordinate the copies of the system rather than record anything: shard and gauge
 * leases and copies' presences (timers table, pk `lease#…`), the due-index's watermarks (timers
 * table, pk `{family}#watermark`, one a shard a minute) and each outbox writer's progress item
 * (outbox table, id `writer#…`, one a second). They come at a fixed pace per copy, shard and
 * minute, whatever the load, so `svc_dynamodb_coordination_items_written_total` counts them
 * apart from the items a consent writes. `table` is the table's name without TABLE_PREFIX;
 * `key` the item or its key, plain or as the client's middleware sees it ({ S: 'x' }).
 */
export function isCoordinationWrite(table: string, key: Record<string, unknown>): boolean {
  if (table === 'timers') {
    const pk = text(key.pk);
    return pk !== undefined && (pk.startsWith('lease#') || pk.endsWith('#watermark'));
  }
  if (table === 'outbox') return text(key.id)?.startsWith(PROGRESS_PREFIX) ?? false;
  return false;
}

function text(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  const s = (v as { S?: unknown } | undefined)?.S;
  return typeof s === 'string' ? s : undefined;
}
