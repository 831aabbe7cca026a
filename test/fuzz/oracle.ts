import type { FuzzRequest } from './request.js';
import type { Answer } from './send.js';
import type { Marker, Principal, TenantApp, World } from './world.js';

/**
 * What the fuzz suite calls a failure, for one request and its answer:
 * - `server-error`: any 5xx (a 503 too: the report says whether /readyz was ready then);
 * - `not-problem`: an error answer that is not `application/problem+json` with a SVC_ `code`
 *   and the HTTP status in `status` (docs/api.md, Errors);
 * - `leak`: the answer shows a marker (id, key, e-mail…) of an app or principal the request
 *   was not entitled to, and that the request did not itself carry (an echo is no leak);
 * - `foreign-id`: a 2xx for a request naming another app's resource by id;
 * - `auth-bypass`: a 2xx for a route that needs a credential when the request carried none
 *   that the route accepts (an API key without the route's scope counts as none).
 * `learn` keeps the world in step with what the answer changed (a rotated secret, a new key).
 */

export type FindingKind =
  'server-error' | 'not-problem' | 'leak' | 'foreign-id' | 'auth-bypass' | 'no-answer' | 'crash';

export interface Finding {
  kind: FindingKind;
  detail: string;
}

/** Everything the request carries, as one text: URL (raw and decoded), header values, body. */
export function requestText(req: FuzzRequest): string {
  let decoded = req.url;
  try {
    decoded = decodeURIComponent(req.url);
  } catch {
    /* undecodable on purpose */
  }
  const headers = Object.values(req.headers).flat().join('\n');
  return `${req.url}\n${decoded}\n${headers}\n${req.bodyText ?? ''}`;
}

/** How long after a revocation or rotation a request already on its way may still pass. */
const GRACE_MS = 3_000;

interface Entitlement {
  full: Set<TenantApp>;
  publicOf: Set<TenantApp>;
  principals: Set<Principal>;
  admin: boolean;
}

function entitlement(req: FuzzRequest, text: string, world: World): Entitlement {
  const e: Entitlement = {
    full: new Set(),
    publicOf: new Set(),
    principals: new Set(),
    admin: false,
  };
  const auth = [req.headers.authorization ?? []].flat().join('\n');
  e.admin = auth.includes(world.adminToken) && req.route.path.startsWith('/api/v1/admin');
  for (const a of world.apps) {
    if (e.admin && req.params.appId === a.appId) e.full.add(a);
    if (
      text.includes(a.secretKey) ||
      a.oldSecrets.some((s) => text.includes(s.key)) ||
      a.keys.some((k) => text.includes(k.key))
    )
      e.full.add(a);
    if (text.includes(a.siteKey)) e.publicOf.add(a);
    for (const p of a.principals)
      if (p.tokens.some((t) => text.includes(t))) {
        e.principals.add(p);
        e.publicOf.add(a);
      }
  }
  return e;
}

function allowed(m: Marker, e: Entitlement): boolean {
  switch (m.kind) {
    case 'secretKey':
    case 'apiKey':
    case 'principalToken':
      return false;
    case 'apiKeyId':
      return e.admin && e.full.has(m.app);
    case 'appId':
    case 'siteKey':
    case 'noticeId':
      return e.full.has(m.app) || e.publicOf.has(m.app);
    default:
      return e.full.has(m.app) || (m.principal !== undefined && e.principals.has(m.principal));
  }
}

const header = (req: FuzzRequest, name: string) => [req.headers[name] ?? []].flat().join('\n');

/** Whether the request carries a credential its route accepts (conservatively: by text). */
export function credentialed(req: FuzzRequest, world: World, startedAt: number): boolean {
  const route = req.target;
  if (!route || route.security.includes('public')) return true;
  const auth = header(req, 'authorization');
  const secretHeader = header(req, 'x-secret-key');
  const siteText = `${header(req, 'x-site-key')}\n${req.bodyText ?? ''}`;
  const origin = header(req, 'origin');
  const recent = (at: number | undefined) => at === undefined || at > startedAt - GRACE_MS;
  const sec = route.security;
  if (sec.includes('admin') && auth.includes(world.adminToken)) return true;
  for (const a of world.apps) {
    if (
      sec.includes('apiKey') &&
      a.keys.some(
        (k) =>
          auth.includes(k.key) &&
          recent(k.revokedAt) &&
          (!route.scope || k.scopes.includes(route.scope)),
      )
    )
      return true;
    if (
      sec.includes('secretKey') &&
      (secretHeader.includes(a.secretKey) ||
        a.oldSecrets.some((s) => secretHeader.includes(s.key) && recent(s.at)))
    )
      return true;
    const tokenOf = a.principals.some((p) => p.tokens.some((t) => auth.includes(t)));
    const browser =
      siteText.includes(a.siteKey) && [...a.originsEver].some((o) => origin.includes(o));
    if (sec.includes('siteKey') && browser && (!sec.includes('secretKey') || tokenOf)) return true;
    if (sec.includes('portal') && tokenOf) return true;
  }
  return false;
}

const ID_KINDS = new Set([
  'appId',
  'noticeId',
  'apiKeyId',
  'dispatchId',
  'transactionId',
  'recordId',
  'referenceId',
]);

function foreignIds(req: FuzzRequest, world: World, e: Entitlement, answer: Answer): string[] {
  const out: string[] = [];
  const check = (where: string, value: unknown) => {
    if (typeof value !== 'string') return;
    const m = world.owner(value);
    if (m && ID_KINDS.has(m.kind) && !allowed(m, e))
      out.push(`${where} ${value} is ${m.app.label}'s ${m.kind}`);
  };
  for (const [name, value] of Object.entries(req.params))
    if (name !== 'userId') check(`path ${name}`, value);
  let body: Record<string, unknown> | undefined;
  try {
    body = JSON.parse(req.bodyText ?? '') as Record<string, unknown>;
  } catch {
    /* not JSON */
  }
  if (body && typeof body === 'object') {
    check('body consentId', body.consentId);
    check('body dispatchId', body.dispatchId);
    if (req.route.path.endsWith('/principal-tokens')) check('body referenceId', body.referenceId);
  }
  // Bulk operations answer 200 with a result per id: none of another app's may be ok.
  if (req.route.path.includes('/bulk/')) {
    try {
      const results =
        (JSON.parse(answer.text) as { results?: { id?: unknown; ok?: unknown }[] }).results ?? [];
      for (const r of results) if (r.ok === true) check('bulk result', r.id);
    } catch {
      /* not JSON */
    }
  }
  return out;
}

export function check(req: FuzzRequest, a: Answer, world: World, startedAt: number): Finding[] {
  const out: Finding[] = [];
  const ct = String(a.headers['content-type'] ?? '');
  if (a.status >= 500)
    out.push({ kind: 'server-error', detail: `${a.status} ${a.text.slice(0, 300)}` });
  if (a.status >= 400) {
    const problem = ct.split(';')[0]!.trim().toLowerCase() === 'application/problem+json';
    let why = problem ? '' : `content-type ${ct || '(none)'}`;
    if (!why && req.method !== 'HEAD') {
      try {
        const b = JSON.parse(a.text) as { code?: unknown; status?: unknown };
        if (typeof b.code !== 'string' || !/^SVC_[A-Z_]+$/.test(b.code)) why = 'no SVC_ code';
        else if (b.status !== a.status) why = `status ${String(b.status)} in the body`;
      } catch {
        why = 'body is not JSON';
      }
    }
    if (why)
      out.push({
        kind: 'not-problem',
        detail: `${a.status}: ${why}; body ${JSON.stringify(a.text.slice(0, 200))}`,
      });
  }
  const text = requestText(req);
  const e = entitlement(req, text, world);
  const shown = `${a.text}\n${Object.values(a.headers).flat().join('\n')}`;
  const leaked = world
    .markers()
    .filter((m) => shown.includes(m.value) && !text.includes(m.value) && !allowed(m, e));
  if (leaked.length > 0)
    out.push({
      kind: 'leak',
      detail: leaked
        .slice(0, 5)
        .map((m) => `${m.app.label}'s ${m.kind} ${m.value}`)
        .join('; '),
    });
  // OPTIONS answers (CORS preflights, Express's list of allowed methods) carry no data.
  if (a.status >= 200 && a.status < 300 && req.method !== 'OPTIONS') {
    const foreign = foreignIds(req, world, e, a);
    if (foreign.length > 0) out.push({ kind: 'foreign-id', detail: foreign.join('; ') });
    if (!credentialed(req, world, startedAt))
      out.push({
        kind: 'auth-bypass',
        detail: `${a.status} without a credential ${req.target?.key ?? req.route.key} accepts (plan ${req.plan})`,
      });
  }
  return out;
}

/** Words that, in a 2xx write, make a userId or e-mail of one app data of another: no longer a marker. */
export function taint(req: FuzzRequest, a: Answer, world: World): void {
  if (a.status >= 300 || req.method === 'GET' || !req.bodyText) return;
  for (const m of world.markers())
    if ((m.kind === 'userId' || m.kind === 'email') && req.bodyText.includes(m.value))
      world.forget(m.value);
}

/** Keeps the world in step with what a successful admin call changed. */
export function learn(req: FuzzRequest, a: Answer, world: World): void {
  if (
    a.status < 200 ||
    a.status >= 300 ||
    !req.target ||
    a.headers['idempotent-replayed'] === 'true'
  )
    return;
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(a.text) as Record<string, unknown>;
  } catch {
    return;
  }
  const key = req.target.key;
  const app = world.appById(req.params.appId ?? '');
  const now = Date.now();
  if (key === 'POST /api/v1/admin/apps') {
    const created = body.app as { appId?: string } | undefined;
    if (created?.appId && typeof body.siteKey === 'string' && typeof body.secretKey === 'string')
      world.addForeignApp(created.appId, body.siteKey, body.secretKey);
    return;
  }
  if (!app) return;
  if (key.endsWith('/secret/rotate') && typeof body.secretKey === 'string') {
    app.oldSecrets.push({ key: app.secretKey, at: now });
    app.secretKey = body.secretKey;
    // A rotation ends every principal token of the app (docs/security.md, Principal tokens).
    for (const p of app.principals) delete p.token;
    world.dirty = true;
  } else if (key === 'PATCH /api/v1/admin/apps/{appId}') {
    for (const o of (body.allowedOrigins as string[] | undefined) ?? []) app.originsEver.add(o);
    world.dirty = true;
  } else if (key === 'POST /api/v1/admin/apps/{appId}/api-keys' && typeof body.key === 'string') {
    app.keys.push({ id: String(body.id), key: body.key, scopes: (body.scopes as string[]) ?? [] });
  } else if (key === 'DELETE /api/v1/admin/apps/{appId}/api-keys/{id}') {
    const k = app.keys.find((x) => x.id === req.params.id);
    if (k && k.revokedAt === undefined) k.revokedAt = now;
    world.dirty = true;
  } else if (
    key === 'POST /api/v1/admin/apps/{appId}/notices' &&
    typeof body.noticeId === 'string'
  ) {
    app.noticeIds.push(body.noticeId);
  }
  world.changed();
}
