/** What a cache belongs to: a Runtime, or anything carrying its cache TTL. */
export interface CacheOwner {
  config: { CREDENTIAL_CACHE_TTL_MS: number };
}

interface Entry {
  value: Promise<unknown>;
  expiresAt: number;
  generation: number;
  /** The read replacing this entry while it still answers (early renewal or refresh ahead). */
  renewal?: Entry;
}

/**
 * A found value used in its last quarter of life starts the read that replaces it, and keeps
 * answering until it expires: a credential in steady use is never waited for, while nothing
 * older than one TTL is ever answered (the replacement's life counts from when its read
 * started). Should that read be slower than the rest of the entry's life, callers after the
 * expiry wait for it, not for another.
 */
const RENEW_WITHIN = 0.25;

/**
 * Bounded so a flood of random keys cannot grow memory; the oldest entries go first. Found
 * values and misses are kept apart, each with its own bound: random unknown keys (a guessing
 * run) only ever push out other misses, never a real credential, which would otherwise be
 * read again from DynamoDB on its next use.
 */
const MAX_ENTRIES = 10_000;
const MAX_MISSES = 10_000;

/**
 * In-process cache for credential and notice lookups, which every ingress request makes.
 * Entries live per Runtime (with its CREDENTIAL_CACHE_TTL_MS); invalidation is per OS
 * process, so a change made through any Runtime here (e.g. the admin and consent services
 * sharing one process) is seen at once by all of them. Other processes see a change within
 * their TTL. Concurrent lookups of one key share one read; a found value in steady use is read
 * again before it expires (`RENEW_WITHIN`). Misses (`undefined`) are cached
 * too, in their own bounded map; creating a credential invalidates.
 */
interface Store {
  /** Reads that found a value. */
  hits: Map<string, Entry>;
  /** Reads that found nothing. */
  misses: Map<string, Entry>;
  /** Reads still running (each leaves when it settles; shared by concurrent lookups). */
  loading: Map<string, Entry>;
}
const caches = new WeakMap<CacheOwner, Store>();
let generation = 0;

function put(map: Map<string, Entry>, max: number, key: string, entry: Entry) {
  map.delete(key);
  map.set(key, entry);
  if (map.size > max) {
    const oldest = map.keys().next().value;
    if (oldest !== undefined) map.delete(oldest);
  }
}

/** Files a settled read: a value with the hits, `undefined` with the misses. */
function file(s: Store, key: string, entry: Entry, value: unknown) {
  s.hits.delete(key);
  s.misses.delete(key);
  if (value === undefined) put(s.misses, MAX_MISSES, key, entry);
  else put(s.hits, MAX_ENTRIES, key, entry);
}

export function cached<T>(
  rt: CacheOwner,
  key: string,
  load: () => Promise<T>,
  o: { refreshAhead?: boolean } = {},
): Promise<T> {
  const ttl = rt.config.CREDENTIAL_CACHE_TTL_MS;
  if (ttl <= 0) return load();
  let store = caches.get(rt);
  if (!store) caches.set(rt, (store = { hits: new Map(), misses: new Map(), loading: new Map() }));
  const s = store;
  const now = Date.now();
  const hit = s.loading.get(key) ?? s.hits.get(key) ?? s.misses.get(key);
  const current = hit !== undefined && hit.generation === generation;
  if (current && hit.expiresAt > now) {
    if (hit.expiresAt - now < ttl * RENEW_WITHIN && s.hits.get(key) === hit)
      renew(s, key, hit, load, ttl);
    return hit.value as Promise<T>;
  }
  // Refresh ahead: an entry expired less than one TTL ago still answers while its replacement
  // is read. A change made elsewhere then shows within two TTLs (one made in this process still
  // shows at once).
  if (current && o.refreshAhead && hit.expiresAt + ttl > now) {
    renew(s, key, hit, load, ttl);
    return hit.value as Promise<T>;
  }
  // Expired while its replacement is read: wait for that read, not for another.
  if (current && hit.renewal) return hit.renewal.value as Promise<T>;
  const value = load();
  const entry: Entry = { value, expiresAt: now + ttl, generation };
  s.loading.set(key, entry);
  value.then(
    (v) => {
      if (s.loading.get(key) !== entry) return;
      s.loading.delete(key);
      file(s, key, entry, v);
    },
    // A failed read is not remembered; the next request tries again.
    () => {
      if (s.loading.get(key) === entry) s.loading.delete(key);
    },
  );
  return value;
}

/** Starts the read that replaces `hit` (once); it is filed when it lands, if `hit` is still the entry. */
function renew<T>(s: Store, key: string, hit: Entry, load: () => Promise<T>, ttl: number) {
  if (hit.renewal) return;
  const next: Entry = { value: load(), expiresAt: Date.now() + ttl, generation: hit.generation };
  hit.renewal = next;
  next.value.then(
    (value) => {
      if (s.hits.get(key) === hit || s.misses.get(key) === hit) file(s, key, next, value);
    },
    // A failed read is not remembered: the entry answers until it expires, and the next
    // lookup after that reads again.
    () => {
      if (hit.renewal === next) hit.renewal = undefined;
    },
  );
}

/**
 * Called after every write that changes a credential, an app's settings or a notice. Dropping
 * everything (by moving to a new generation) is simpler than tracking which keys a change
 * affects, and such writes are rare.
 */
export function invalidateCache(): void {
  generation++;
}
