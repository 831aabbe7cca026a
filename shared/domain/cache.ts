import type { Runtime } from '../runtime.js';

interface Entry {
  value: Promise<unknown>;
  expiresAt: number;
  generation: number;
  /** A refresh-ahead read is running. */
  refreshing?: boolean;
}

/** Bounded so a flood of random keys cannot grow memory; the oldest entries go first. */
const MAX_ENTRIES = 10_000;

/**
 * In-process cache for credential and notice lookups, which every ingress request makes.
 * Entries live per Runtime (with its CREDENTIAL_CACHE_TTL_MS); invalidation is per OS
 * process, so a change made through any Runtime here (e.g. the admin and consent services
 * sharing one process) is seen at once by all of them. Other processes see a change within
 * their TTL. Concurrent lookups of one key share one read. Misses are cached too; creating a
 * credential invalidates.
 */
const caches = new WeakMap<Runtime, Map<string, Entry>>();
let generation = 0;

export function cached<T>(
  rt: Runtime,
  key: string,
  load: () => Promise<T>,
  o: { refreshAhead?: boolean } = {},
): Promise<T> {
  const ttl = rt.config.CREDENTIAL_CACHE_TTL_MS;
  if (ttl <= 0) return load();
  let entries = caches.get(rt);
  if (!entries) caches.set(rt, (entries = new Map()));
  const now = Date.now();
  const hit = entries.get(key);
  if (hit && hit.expiresAt > now && hit.generation === generation) return hit.value as Promise<T>;
  // Refresh ahead: an entry expired less than one TTL ago still answers while one read
  // replaces it behind, so a key in steady use never waits for DynamoDB. A change made
  // elsewhere then shows within two TTLs (one made in this process still shows at once).
  if (o.refreshAhead && hit && hit.generation === generation && hit.expiresAt + ttl > now) {
    if (!hit.refreshing) {
      hit.refreshing = true;
      const next = load();
      next.then(
        () => {
          if (entries.get(key) === hit)
            entries.set(key, {
              value: next,
              expiresAt: Date.now() + ttl,
              generation: hit.generation,
            });
        },
        () => (hit.refreshing = false),
      );
    }
    return hit.value as Promise<T>;
  }
  if (hit) entries.delete(key);
  const value = load();
  const entry = { value, expiresAt: now + ttl, generation };
  entries.set(key, entry);
  // A failed read is not remembered; the next request tries again.
  const map = entries;
  value.catch(() => {
    if (map.get(key) === entry) map.delete(key);
  });
  if (entries.size > MAX_ENTRIES) {
    const oldest = entries.keys().next().value;
    if (oldest !== undefined) entries.delete(oldest);
  }
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
