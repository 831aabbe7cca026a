import { BASE62, type Rng } from './rng.js';
import type { Route } from './routes.js';
import { hostileString } from './hostile.js';
import type { ApiKeyInfo, Principal, TenantApp } from './world.js';
import { liveToken, principalOf, type Ctx } from './context.js';

/**
 * The credentials of a fuzz request, by plan: the right one for the route, another kind, the
 * other tenant's, a stale one, garbage, none, or several at once.
 */

export type Placement = 'authorization' | 'x-secret-key' | 'x-site-key' | 'body' | 'origin';
export type CredKind =
  'admin' | 'apiKey' | 'secretKey' | 'siteKey' | 'token' | 'origin' | 'garbage';

export interface Cred {
  kind: CredKind;
  value: string;
  placement: Placement;
  app?: TenantApp;
  principal?: Principal;
  apiKey?: ApiKeyInfo;
  /** Issued by the service and not (knowingly) revoked, rotated away or expired. */
  live: boolean;
}

export const PLANS = [
  'right',
  'wrong-kind',
  'other-app',
  'garbage',
  'stale',
  'none',
  'mixed',
] as const;
export type Plan = (typeof PLANS)[number];

export const PLAN_WEIGHTS: [number, Plan][] = [
  [45, 'right'],
  [11, 'wrong-kind'],
  [10, 'other-app'],
  [10, 'garbage'],
  [8, 'stale'],
  [7, 'none'],
  [9, 'mixed'],
];

export function keyFor(t: TenantApp, scope: string | undefined, rng: Rng): ApiKeyInfo | undefined {
  const live = t.keys.filter(
    (k) => k.revokedAt === undefined && (scope === undefined || k.scopes.includes(scope)),
  );
  return live.length > 0 ? rng.pick(live) : undefined;
}

/** The credentials the route wants, for tenant `t` and principal `p`. */
export function rightCreds(c: Ctx, t: TenantApp, p: Principal | undefined): Cred[] {
  const { rng, route } = c;
  const sec = route.security;
  if (sec.includes('admin'))
    return [{ kind: 'admin', value: c.world.adminToken, placement: 'authorization', live: true }];
  if (sec.includes('apiKey')) {
    const k = keyFor(t, route.scope, rng);
    return k
      ? [
          {
            kind: 'apiKey',
            value: k.key,
            placement: 'authorization',
            app: t,
            apiKey: k,
            live: true,
          },
        ]
      : [];
  }
  const browser = (): Cred[] => {
    const tok = liveToken(p);
    return [
      { kind: 'siteKey', value: t.siteKey, placement: 'x-site-key', app: t, live: true },
      { kind: 'origin', value: t.origin, placement: 'origin', app: t, live: true },
      ...(tok && sec.includes('secretKey')
        ? [
            {
              kind: 'token' as const,
              value: tok,
              placement: 'authorization' as const,
              app: t,
              ...(p ? { principal: p } : {}),
              live: true,
            },
          ]
        : []),
    ];
  };
  if (sec.includes('secretKey') && sec.includes('siteKey'))
    return rng.chance(0.5)
      ? [{ kind: 'secretKey', value: t.secretKey, placement: 'x-secret-key', app: t, live: true }]
      : browser();
  if (sec.includes('secretKey'))
    return [
      { kind: 'secretKey', value: t.secretKey, placement: 'x-secret-key', app: t, live: true },
    ];
  if (sec.includes('siteKey')) return browser();
  if (sec.includes('portal')) {
    const tok = liveToken(p);
    return tok
      ? [
          {
            kind: 'token',
            value: tok,
            placement: 'authorization',
            app: t,
            ...(p ? { principal: p } : {}),
            live: true,
          },
        ]
      : [];
  }
  return [];
}

/** Every credential of `t`, for putting in the wrong place. */
export function allCreds(c: Ctx, t: TenantApp, p: Principal | undefined): Cred[] {
  const out: Cred[] = [
    { kind: 'admin', value: c.world.adminToken, placement: 'authorization', live: true },
    { kind: 'secretKey', value: t.secretKey, placement: 'x-secret-key', app: t, live: true },
    { kind: 'siteKey', value: t.siteKey, placement: 'x-site-key', app: t, live: true },
  ];
  for (const k of t.keys)
    out.push({
      kind: 'apiKey',
      value: k.key,
      placement: 'authorization',
      app: t,
      apiKey: k,
      live: k.revokedAt === undefined,
    });
  const tok = liveToken(p);
  if (tok)
    out.push({
      kind: 'token',
      value: tok,
      placement: 'authorization',
      app: t,
      ...(p ? { principal: p } : {}),
      live: true,
    });
  return out;
}

export function primaryPlacement(route: Route): Placement {
  if (route.security.includes('secretKey') && !route.security.includes('siteKey'))
    return 'x-secret-key';
  if (route.security.includes('siteKey') && !route.security.includes('secretKey'))
    return 'x-site-key';
  return 'authorization';
}

export function garbageCred(c: Ctx): Cred[] {
  const { rng, X } = c;
  const right = rightCreds(c, X, c.P);
  const base = rng.pick([
    ...right.map((r) => r.value),
    c.world.adminToken,
    X.secretKey,
    'svc_ak_',
    'svc_pt_',
  ]);
  const v = rng.pick([
    () => base.slice(0, -1),
    () => `${base}x`,
    () => base.toUpperCase(),
    () => `${base.slice(0, -4)}${rng.chars(BASE62, 4)}`,
    () => ` ${base} `,
    () => hostileString(rng).slice(0, 2000),
    () => `svc_ak_${rng.chars(BASE62, 40)}`,
    () => `svc_sk_test_${rng.chars(BASE62, 40)}`,
    () => `APP_${rng.chars(BASE62, 24)}`,
    () =>
      `svc_pt_${Buffer.from(JSON.stringify({ k: 'k1', a: X.appId, r: c.P?.referenceId ?? 'SVC-REF-00000000', s: 1, t: 'b', i: 1, e: 9e15 })).toString('base64url')}.${rng.chars(BASE62, 43)}`,
    () => '',
  ])();
  const placement = primaryPlacement(c.route);
  const scheme = rng.pick([
    'Bearer ',
    'bearer ',
    'Basic ',
    'Portal ',
    'Bearer  ',
    '',
    'Bearer\t',
    'Token ',
  ]);
  return [
    {
      kind: 'garbage',
      value: placement === 'authorization' ? `${scheme}${v}` : v,
      placement,
      live: false,
    },
  ];
}

/** True once a principal token's own expiry (`e` in its payload, ms) is in the past. */
function pastExpiry(token: string): boolean {
  try {
    const payload = token.replace(/^svc_pt_/, '').split('.')[0] ?? '';
    const { e } = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { e?: unknown };
    return typeof e === 'number' && e < Date.now();
  } catch {
    return true;
  }
}

export function staleCred(c: Ctx): Cred[] {
  const { rng, X, route } = c;
  const options: (() => Cred[])[] = [];
  const revoked = X.keys.filter((k) => k.revokedAt !== undefined);
  if (revoked.length > 0) {
    const k = rng.pick(revoked);
    options.push(() => [
      { kind: 'apiKey', value: k.key, placement: 'authorization', app: X, apiKey: k, live: false },
    ]);
  }
  if (X.oldSecrets.length > 0) {
    const s = rng.pick(X.oldSecrets);
    options.push(() => [
      { kind: 'secretKey', value: s.key, placement: 'x-secret-key', app: X, live: false },
    ]);
  }
  // Minted with a 1 s lifetime: only those whose expiry (`e`, ms) has passed are stale yet.
  const expired = X.expiredTokens.filter(pastExpiry);
  if (expired.length > 0) {
    const tok = rng.pick(expired);
    options.push(() => [
      ...rightCreds(c, X, c.P).filter((r) => r.kind !== 'token' && r.kind !== 'secretKey'),
      { kind: 'token', value: tok, placement: 'authorization', app: X, live: false },
    ]);
  }
  // A token of another principal of the same app (the portal path names c.P), or of the other app.
  const other = X.principals.filter((q) => q !== c.P && q.token !== undefined);
  if (other.length > 0) {
    const q = rng.pick(other);
    options.push(() => [
      ...rightCreds(c, X, c.P).filter((r) => r.kind !== 'token' && r.kind !== 'secretKey'),
      {
        kind: 'token',
        value: liveToken(q)!,
        placement: 'authorization',
        app: X,
        principal: q,
        live: true,
      },
    ]);
  }
  const py = principalOf(rng, c.Y);
  const ty = liveToken(py);
  if (ty && (route.security.includes('siteKey') || route.security.includes('portal')))
    options.push(() => [
      ...rightCreds(c, X, c.P).filter((r) => r.kind !== 'token' && r.kind !== 'secretKey'),
      {
        kind: 'token',
        value: ty,
        placement: 'authorization',
        app: c.Y,
        ...(py ? { principal: py } : {}),
        live: true,
      },
    ]);
  return options.length > 0 ? rng.pick(options)() : garbageCred(c);
}

export function credentials(c: Ctx, plan: Plan): Cred[] {
  const { rng, X, Y } = c;
  switch (plan) {
    case 'right':
      return rightCreds(c, X, c.P);
    case 'other-app':
      return rightCreds(c, Y, principalOf(rng, Y));
    case 'none':
      return [];
    case 'garbage':
      return garbageCred(c);
    case 'stale':
      return staleCred(c);
    case 'wrong-kind': {
      const right = new Set(rightCreds(c, X, c.P).map((r) => r.value));
      const placement = primaryPlacement(c.route);
      const wrong = allCreds(c, X, c.P).filter((r) => !right.has(r.value));
      const w = rng.pick(wrong);
      return [{ ...w, placement }];
    }
    case 'mixed': {
      const a = rightCreds(c, X, c.P);
      const b = rng.chance(0.5)
        ? rightCreds(c, Y, principalOf(rng, Y))
        : allCreds(c, Y, principalOf(rng, Y)).slice(0, rng.range(1, 4));
      return rng.chance(0.5) ? [...a, ...b] : [...b, ...a];
    }
  }
}

/** The header text of a credential; garbage ones already carry their scheme. */
export function headerValue(cred: Cred, rng: Rng): string {
  if (cred.placement !== 'authorization' || cred.kind === 'garbage') return cred.value;
  if (cred.kind === 'token' && rng.chance(0.5)) return `Portal ${cred.value}`;
  return `${rng.chance(0.9) ? 'Bearer' : rng.pick(['bearer', 'BEARER', 'Bearer '])} ${cred.value}`;
}
