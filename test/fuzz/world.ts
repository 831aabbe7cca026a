import { randomBytes } from 'node:crypto';
import {
  markersOf,
  type ApiKeyInfo,
  type DispatchInfo,
  type Marker,
  type Principal,
  type TenantApp,
} from './markers.js';

export type { ApiKeyInfo, DispatchInfo, Marker, Principal, TenantApp } from './markers.js';

/**
 * What the fuzz suite knows about the service's data: two tenant apps (A and B) made through
 * the admin API, each with API keys of every scope, a notice, principals with consents,
 * principal tokens and, once the dispatcher has run, dispatches. Their ids and keys are the
 * markers a response may only show to a caller entitled to them (leak detection), and the
 * pools request parameters are drawn from (another app's ids). Kept up to date from the
 * answers the fuzzer gets (a rotated secret, a revoked key, a changed allowlist).
 */

export interface Reply {
  status: number;
  headers: Headers;
  // Setup reads fields of several answer shapes; `any` keeps that short.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

const hex = (n: number) => randomBytes(n).toString('hex');

export class World {
  readonly apps: TenantApp[] = [];
  /** Problems met while building or replenishing (a 5xx there is a finding too). */
  readonly issues: string[] = [];
  private markerCache: Marker[] | undefined;
  /** Values that stopped being one app's own (a fuzzed write gave them to another app). */
  private readonly forgotten = new Set<string>();
  /** Set when a fuzzed admin call changed a tenant's keys or allowlist: repair soon. */
  dirty = false;
  /** Setup calls made (not counted as fuzz requests). */
  setupCalls = 0;

  constructor(
    readonly baseUrl: string,
    readonly adminToken: string,
    readonly receiverUrl: string,
    private readonly log: (m: string) => void,
  ) {}

  get tenants(): TenantApp[] {
    return this.apps.filter((a) => a.tenant);
  }

  changed(): void {
    this.markerCache = undefined;
  }

  forget(value: string): void {
    this.forgotten.add(value);
    this.changed();
  }

  /** An app the fuzzer created through POST /apps: its keys are markers, it has no data. */
  addForeignApp(appId: string, siteKey: string, secretKey: string): void {
    this.apps.push({
      label: `fuzz-created ${appId}`,
      appId,
      siteKey,
      secretKey,
      oldSecrets: [],
      origin: 'https://unknown.fuzz.example',
      originsEver: new Set(),
      keys: [],
      noticeIds: [],
      triggerKeys: [],
      purposes: [],
      principals: [],
      captures: [],
      dispatches: [],
      cursors: [],
      expiredTokens: [],
      tenant: false,
    });
    this.changed();
  }

  async call(
    method: string,
    path: string,
    o: { headers?: Record<string, string>; body?: unknown } = {},
  ): Promise<Reply> {
    this.setupCalls++;
    const headers: Record<string, string> = { ...o.headers };
    if (o.body !== undefined) headers['content-type'] = 'application/json';
    const r = await fetch(`${this.baseUrl}${path}`, {
      method,
      headers,
      ...(o.body === undefined ? {} : { body: JSON.stringify(o.body) }),
    });
    const text = await r.text();
    let body: unknown = text;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      /* not JSON */
    }
    if (r.status >= 500)
      this.issues.push(`setup ${method} ${path} → ${r.status} ${text.slice(0, 300)}`);
    return { status: r.status, headers: r.headers, body };
  }

  /** A call that must succeed (setup): throws with the answer otherwise. */
  async must(
    method: string,
    path: string,
    o: { headers?: Record<string, string>; body?: unknown } = {},
    expect = [200, 201, 202],
  ) {
    const r = await this.call(method, path, o);
    if (!expect.includes(r.status))
      throw new Error(
        `fuzz setup: ${method} ${path} → ${r.status} ${JSON.stringify(r.body).slice(0, 500)}`,
      );
    return r.body;
  }

  admin(method: string, path: string, body?: unknown) {
    return this.must(method, `/api/v1/admin${path}`, {
      headers: { authorization: `Bearer ${this.adminToken}` },
      ...(body === undefined ? {} : { body }),
    });
  }

  /** Creates tenant `label` with keys, a notice and two principals. */
  async addTenant(label: string): Promise<TenantApp> {
    const origin = `https://${label.toLowerCase()}-${hex(3)}.fuzz.example`;
    const created = await this.admin('POST', '/apps', {
      name: `Fuzz tenant ${label}`,
      environment: 'sandbox',
      webhookUrl: this.receiverUrl,
      allowedOrigins: [origin],
      contactEmail: `dpo-${label.toLowerCase()}-${hex(3)}@fuzz.example`,
    });
    const t: TenantApp = {
      label,
      appId: created.app.appId,
      siteKey: created.siteKey,
      secretKey: created.secretKey,
      oldSecrets: [],
      origin,
      originsEver: new Set([origin]),
      keys: [],
      noticeIds: [],
      triggerKeys: [],
      purposes: ['analytics', 'marketing', 'personalisation'],
      principals: [],
      captures: [],
      dispatches: [],
      cursors: [],
      expiredTokens: [],
      tenant: true,
    };
    this.apps.push(t);
    const scopeSets = [
      ['consents:read', 'consents:write'],
      ['consents:read'],
      ['consents:write'],
      ['ledger:read'],
      ['consents:read', 'consents:write', 'ledger:read'],
    ];
    const triggerKey = `signup_${label.toLowerCase()}_${hex(2)}`;
    const [keys, notice] = await Promise.all([
      Promise.all(
        scopeSets.map((scopes) =>
          this.admin('POST', `/apps/${t.appId}/api-keys`, { name: scopes.join('+'), scopes }),
        ),
      ),
      this.admin('POST', `/apps/${t.appId}/notices`, noticeBody(triggerKey, t.purposes)),
    ]);
    for (const k of keys) t.keys.push({ id: k.id, key: k.key, scopes: k.scopes });
    const revoked = await this.admin('POST', `/apps/${t.appId}/api-keys`, {
      name: 'revoked',
      scopes: ['consents:read'],
    });
    await this.admin('DELETE', `/apps/${t.appId}/api-keys/${revoked.id}`);
    t.keys.push({ id: revoked.id, key: revoked.key, scopes: revoked.scopes, revokedAt: 0 });
    t.noticeIds.push(notice.noticeId);
    t.triggerKeys.push(triggerKey);
    await this.addPrincipals(t, true);
    this.changed();
    return t;
  }

  key(t: TenantApp, scope: string): ApiKeyInfo {
    const k = t.keys.find((k) => k.revokedAt === undefined && k.scopes.includes(scope));
    if (!k) throw new Error(`fuzz: ${t.label} has no live key with ${scope}`);
    return k;
  }

  /** One principal from the record API (with a withdrawal, for a postback dispatch) and one widget capture. */
  async addPrincipals(t: TenantApp, strict: boolean): Promise<void> {
    const rw = { authorization: `Bearer ${this.key(t, 'consents:write').key}` };
    const secret = { 'x-secret-key': t.secretKey };
    const tag = `${t.label.toLowerCase()}-${hex(4)}`;
    const userId = `fz-user-${tag}`;
    const email = `fz-${tag}@fuzz.example`;
    const created = await this.call('POST', '/api/v1/consents', {
      headers: rw,
      body: { userId, email, consents: { analytics: true, marketing: true } },
    });
    if (created.status !== 201) {
      if (strict)
        throw new Error(
          `fuzz setup: create consent → ${created.status} ${JSON.stringify(created.body)}`,
        );
      return;
    }
    const p: Principal = {
      referenceId: created.body.referenceId,
      userId,
      email,
      transactionIds: [],
      recordIds: [],
      tokens: [],
    };
    t.principals.push(p);
    await this.call('PUT', `/api/v1/consents/${userId}`, {
      headers: rw,
      body: { consents: { marketing: false } },
    });
    const captured = await this.call('POST', '/api/v1/widget/capture', {
      headers: { 'x-site-key': t.siteKey, origin: t.origin },
      body: {
        siteKey: t.siteKey,
        processId: t.triggerKeys[0],
        mode: 'granular',
        purposes: ['analytics'],
        language: 'en',
        pageUrl: `${t.origin}/signup`,
      },
    });
    if (captured.status === 201) {
      const c: Principal = {
        referenceId: captured.body.referenceId,
        transactionIds: [captured.body.consentId],
        recordIds: [],
        tokens: [captured.body.principalToken],
        token: captured.body.principalToken,
      };
      t.principals.push(c);
      t.captures.push(captured.body.consentId);
    } else if (strict)
      throw new Error(`fuzz setup: capture → ${captured.status} ${JSON.stringify(captured.body)}`);
    for (const q of t.principals.slice(-2)) {
      const list = await this.call(
        'GET',
        `/api/public/consents/my-transactions?referenceId=${q.referenceId}&limit=100`,
        { headers: secret },
      );
      if (list.status === 200) {
        for (const txn of list.body.items as {
          transactionId: string;
          records: { recordId: string }[];
        }[]) {
          if (!q.transactionIds.includes(txn.transactionId))
            q.transactionIds.push(txn.transactionId);
          for (const r of txn.records)
            if (!q.recordIds.includes(r.recordId)) q.recordIds.push(r.recordId);
        }
      }
      const page = await this.call(
        'GET',
        `/api/public/consents/my-transactions?referenceId=${q.referenceId}&limit=1`,
        { headers: secret },
      );
      if (page.status === 200 && typeof page.body.nextCursor === 'string')
        t.cursors.push(page.body.nextCursor);
      const minted = await this.call('POST', '/api/public/consents/principal-tokens', {
        headers: secret,
        body: { referenceId: q.referenceId, ttlSeconds: 3600 },
      });
      if (minted.status === 201) giveToken(q, minted.body.token);
      else if (strict)
        throw new Error(`fuzz setup: mint → ${minted.status} ${JSON.stringify(minted.body)}`);
    }
    const short = await this.call('POST', '/api/public/consents/principal-tokens', {
      headers: secret,
      body: { referenceId: p.referenceId, ttlSeconds: 1 },
    });
    if (short.status === 201) t.expiredTokens.push(short.body.token);
    this.changed();
  }

  /** Reads the app's dispatches from the ledger; true when one that needs a postback is known. */
  async readDispatches(t: TenantApp): Promise<boolean> {
    const ledger = t.keys.find(
      (k) => k.revokedAt === undefined && k.scopes.includes('ledger:read'),
    );
    if (!ledger) return false;
    const r = await this.call('GET', '/api/v1/ledger/dispatches?limit=100', {
      headers: { authorization: `Bearer ${ledger.key}` },
    });
    if (r.status !== 200) return false;
    for (const d of r.body.items as DispatchInfo[]) {
      if (t.dispatches.some((x) => x.dispatchId === d.dispatchId)) continue;
      t.dispatches.push({
        dispatchId: d.dispatchId,
        eventId: d.eventId,
        referenceId: d.referenceId,
        event: d.event,
        postbackRequired: d.postbackRequired,
      });
    }
    const page = await this.call('GET', '/api/v1/ledger/dispatches?limit=1', {
      headers: { authorization: `Bearer ${ledger.key}` },
    });
    if (page.status === 200 && typeof page.body.nextCursor === 'string')
      t.cursors.push(page.body.nextCursor);
    this.changed();
    return t.dispatches.some((d) => d.postbackRequired);
  }

  /** Waits (polling) until every tenant has a dispatch awaiting a postback, or `ms` passed. */
  async waitForDispatches(ms: number): Promise<boolean> {
    const until = Date.now() + ms;
    for (;;) {
      const ok = (await Promise.all(this.tenants.map((t) => this.readDispatches(t)))).every(
        Boolean,
      );
      if (ok) return true;
      if (Date.now() > until) {
        this.log(
          `no postback dispatch yet for ${this.tenants
            .filter((t) => !t.dispatches.some((d) => d.postbackRequired))
            .map((t) => t.label)
            .join(', ')}; fuzzing dispatch routes with unknown ids only`,
        );
        return false;
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  }

  /** More data (the fuzzer erases and revokes), fresh tokens, keys and origins put back. */
  async replenish(): Promise<void> {
    this.dirty = false;
    for (const t of this.tenants) {
      try {
        await this.repair(t);
        await this.addPrincipals(t, false);
        await this.remint(t);
        await this.readDispatches(t);
      } catch (err) {
        this.issues.push(`replenish ${t.label}: ${(err as Error).message}`);
      }
    }
  }

  /** Fresh tokens for principals whose token a rotated secret ended (the latest ones). */
  async remint(t: TenantApp): Promise<void> {
    for (const p of t.principals.filter((q) => q.token === undefined).slice(-6)) {
      const r = await this.call('POST', '/api/public/consents/principal-tokens', {
        headers: { 'x-secret-key': t.secretKey },
        body: { referenceId: p.referenceId, ttlSeconds: 3600 },
      });
      if (r.status === 201) giveToken(p, r.body.token);
    }
    this.changed();
  }

  /** Puts back what fuzzed admin calls took away: a live key of every scope, the allowlist, the webhook URL. */
  async repair(t: TenantApp): Promise<void> {
    for (const scope of ['consents:read', 'consents:write', 'ledger:read']) {
      if (t.keys.some((k) => k.revokedAt === undefined && k.scopes.includes(scope))) continue;
      const k = await this.admin('POST', `/apps/${t.appId}/api-keys`, {
        name: `again ${scope}`,
        scopes: [scope],
      });
      t.keys.push({ id: k.id, key: k.key, scopes: k.scopes });
    }
    const app = await this.admin('GET', `/apps/${t.appId}`);
    const origins = app.allowedOrigins as string[];
    if (origins.length !== 1 || origins[0] !== t.origin || app.webhookUrl !== this.receiverUrl)
      await this.admin('PATCH', `/apps/${t.appId}`, {
        allowedOrigins: [t.origin],
        webhookUrl: this.receiverUrl,
      });
    this.changed();
  }

  /** Every marker of every app the world knows, cached until the world changes. */
  markers(): Marker[] {
    return (this.markerCache ??= markersOf(this.apps, this.forgotten));
  }

  appById(appId: string): TenantApp | undefined {
    return this.apps.find((a) => a.appId === appId);
  }

  /** The app and principal a world id belongs to, if any. */
  owner(value: string): Marker | undefined {
    return this.markers().find((m) => m.value === value);
  }
}

function giveToken(p: Principal, token: string): void {
  p.tokens.push(token);
  p.token = token;
}

export function noticeBody(triggerKey: string, purposes: string[]) {
  const labels = Object.fromEntries(
    purposes.map((p) => [p, { label: p, description: `Why we need ${p}` }]),
  );
  return {
    kind: 'data_collection',
    triggerKey,
    defaultLanguage: 'en',
    purposes: purposes.map((name) => ({ name, required: false, dataItems: ['email'] })),
    translations: {
      en: { title: 'Your data', body: 'We use it for:', purposes: labels },
      hi: { title: 'आपका डेटा', body: 'हम इसका उपयोग करते हैं:', purposes: labels },
    },
    validityDays: 365,
  };
}
