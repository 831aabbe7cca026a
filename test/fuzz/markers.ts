/**
 * What the fuzz suite knows of each app, and its markers: the values (ids, keys, e-mails,
 * tokens) an answer may only show to a caller entitled to them.
 */

export interface ApiKeyInfo {
  id: string;
  key: string;
  scopes: string[];
  /** When the fuzzer saw it revoked (ms); a revoked key is still a marker of its app. */
  revokedAt?: number;
}

export interface Principal {
  referenceId: string;
  userId?: string;
  email?: string;
  transactionIds: string[];
  recordIds: string[];
  /** Principal tokens minted for it (browser kind), newest last: all are markers. */
  tokens: string[];
  /** The newest token, until a rotation of the app's secret ends it. */
  token?: string;
}

export interface DispatchInfo {
  dispatchId: string;
  eventId: string;
  referenceId: string;
  event: string;
  postbackRequired: boolean;
}

export interface TenantApp {
  label: string;
  appId: string;
  siteKey: string;
  secretKey: string;
  /** Secrets rotated away, with when (ms) the fuzzer saw the rotation. */
  oldSecrets: { key: string; at: number }[];
  origin: string;
  /** Every origin the allowlist has held (a fuzzed PATCH may widen it for a moment). */
  originsEver: Set<string>;
  keys: ApiKeyInfo[];
  noticeIds: string[];
  triggerKeys: string[];
  purposes: string[];
  principals: Principal[];
  /** Transaction ids of widget captures (for `consentId` links). */
  captures: string[];
  dispatches: DispatchInfo[];
  cursors: string[];
  expiredTokens: string[];
  /** False for apps the fuzzer itself created through POST /apps: markers only, no data. */
  tenant: boolean;
}

export type MarkerKind =
  | 'appId'
  | 'siteKey'
  | 'noticeId'
  | 'secretKey'
  | 'apiKey'
  | 'apiKeyId'
  | 'referenceId'
  | 'userId'
  | 'email'
  | 'transactionId'
  | 'recordId'
  | 'dispatchId'
  | 'eventId'
  | 'principalToken';

export interface Marker {
  value: string;
  kind: MarkerKind;
  app: TenantApp;
  principal?: Principal;
}

/** Every marker of `apps`, but the values a fuzzed write made another app's data too. */
export function markersOf(apps: TenantApp[], forgotten: ReadonlySet<string>): Marker[] {
  const out: Marker[] = [];
  for (const app of apps) {
    const add = (value: string | undefined, kind: MarkerKind, principal?: Principal) => {
      if (value && !forgotten.has(value))
        out.push({ value, kind, app, ...(principal ? { principal } : {}) });
    };
    add(app.appId, 'appId');
    add(app.siteKey, 'siteKey');
    add(app.secretKey, 'secretKey');
    for (const s of app.oldSecrets) add(s.key, 'secretKey');
    for (const k of app.keys) {
      add(k.key, 'apiKey');
      add(k.id, 'apiKeyId');
    }
    for (const n of app.noticeIds) add(n, 'noticeId');
    for (const p of app.principals) {
      add(p.referenceId, 'referenceId', p);
      add(p.userId, 'userId', p);
      add(p.email, 'email', p);
      for (const id of p.transactionIds) add(id, 'transactionId', p);
      for (const id of p.recordIds) add(id, 'recordId', p);
      for (const tok of p.tokens) add(tok, 'principalToken', p);
    }
    for (const d of app.dispatches) {
      const p = app.principals.find((q) => q.referenceId === d.referenceId);
      add(d.dispatchId, 'dispatchId', p);
      add(d.eventId, 'eventId', p);
    }
  }
  return out;
}
