import type { Runtime } from '../runtime.js';

interface Entry {
  value: Promise<unknown>;
  expiresAt: number;
  generation: number;
  /** A refresh-ahead read is running. */
  refreshing?: boolean;
}

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
 * their TTL. Concurrent lookups of one key share one read. Misses (`undefined`) are cached
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
const caches = new WeakMap<Runtime, Store>();
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
  rt: Runtime,
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
  if (hit && hit.expiresAt > now && hit.generation === generation) return hit.value as Promise<T>;
  // Refresh ahead: an entry expired less than one TTL ago still answers while one read
  // replaces it behind, so a key in steady use never waits for DynamoDB. A change made
  // elsewhere then shows within two TTLs (one made in this process still shows at once).
  if (o.refreshAhead && hit && hit.generation === generation && hit.expiresAt + ttl > now) {
    if (!hit.refreshing) {
      hit.refreshing = true;
      const next = load();
      next.then(
        (value) => {
          if (s.hits.get(key) !== hit && s.misses.get(key) !== hit) return;
          file(
            s,
            key,
            { value: next, expiresAt: Date.now() + ttl, generation: hit.generation },
            value,
          );
        },
        () => (hit.refreshing = false),
      );
    }
    return hit.value as Promise<T>;
  }
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

/**
 * Called after every write that changes a credential, an app's settings or a notice. Dropping
 * everything (by moving to a new generation) is simpler than tracking which keys a change
 * affects, and such writes are rare.
 */
export function invalidateCache(): void {
  generation++;
}
