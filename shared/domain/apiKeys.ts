import { cached, invalidateCache, type CacheOwner } from './cache.js';
import { sha256hex } from './crypto.js';
import { newApiKey, newApiKeyId, patterns } from './ids.js';
import type { ApiKey, ApiKeyScope } from './types.js';

/**
 * API keys (record API bearer). The key itself is shown once at creation and stored only as its
 * hash.
 */
export const API_KEY_SCOPES = [
  'consents:read',
  'consents:write',
  'ledger:read',
  'console',
] as const satisfies readonly ApiKeyScope[];

/** Where API keys are kept, by the hash of the key (shared/storage/keys/store.ts). */
export interface ApiKeyStore {
  /** Puts a new key under `hash`; refuses one that exists. */
  create(apiKey: ApiKey, hash: string): Promise<void>;
  /** Every key of the app, revoked ones included, oldest first. */
  list(appId: string): Promise<ApiKey[]>;
  /** Revokes key `id` of the app at `at` (again: the key as revoked); undefined if unknown. */
  revoke(appId: string, id: string, at: string): Promise<ApiKey | undefined>;
  byHash(hash: string): Promise<ApiKey | undefined>;
}

/** What the key functions use; a Runtime is one. */
export interface ApiKeysDeps extends CacheOwner {
  apiKeys: ApiKeyStore;
}

/** The caller has checked that the app exists. */
export async function createApiKey(
  rt: ApiKeysDeps,
  appId: string,
  input: { name: string; scopes: ApiKeyScope[] },
): Promise<{ apiKey: ApiKey; key: string }> {
  const key = newApiKey();
  const apiKey: ApiKey = {
    id: newApiKeyId(),
    appId,
    name: input.name,
    scopes: [...new Set(input.scopes)],
    createdAt: new Date().toISOString(),
    revokedAt: null,
  };
  await rt.apiKeys.create(apiKey, sha256hex(key));
  invalidateCache();
  return { apiKey, key };
}

/** Every key of the app, revoked ones included, oldest first. */
export function listApiKeys(rt: ApiKeysDeps, appId: string): Promise<ApiKey[]> {
  return rt.apiKeys.list(appId);
}

/** Revokes key `id` of the app; revoking again returns the same revoked key. */
export async function revokeApiKey(
  rt: ApiKeysDeps,
  appId: string,
  id: string,
): Promise<ApiKey | undefined> {
  try {
    return await rt.apiKeys.revoke(appId, id, new Date().toISOString());
  } finally {
    invalidateCache();
  }
}

/** The stored key for a presented bearer value (revoked keys included; the caller decides). */
export function getApiKeyByValue(rt: ApiKeysDeps, key: string): Promise<ApiKey | undefined> {
  if (!patterns.apiKey.test(key)) return Promise.resolve(undefined);
  const hash = sha256hex(key);
  return cached(rt, `apikey:${hash}`, () => rt.apiKeys.byHash(hash));
}
