import { deflateSync, gzipSync } from 'node:zlib';
import { bodyHint, CONTENT_TYPES, textMutation } from './body.js';
import { idOf, pickOr, principalOf, unknownId, type Ctx } from './context.js';
import { credentials, headerValue, PLAN_WEIGHTS, type Cred, type Plan } from './credentials.js';
import { Rng } from './rng.js';
import type { Route } from './routes.js';
import { hostileString } from './hostile.js';
import { generate, mutate, stringify, type Json } from './values.js';
import { noticeBody, type TenantApp, type World } from './world.js';

/**
 * One fuzz request: a route of the OpenAPI document, valid parameters and body generated from
 * its schemas and the world's ids, then broken in a few of many ways, with a credential plan
 * (credentials.ts).
 */

export interface FuzzRequest {
  index: number;
  route: Route;
  /** The route the method and path really reach (undefined when none: a 404 is due). */
  target: Route | undefined;
  method: string;
  url: string;
  headers: Record<string, string | string[]>;
  body: Buffer | undefined;
  /** The body before content encoding, for echo checks and the report. */
  bodyText: string | undefined;
  plan: Plan;
  creds: Cred[];
  notes: string[];
  /** Decoded path parameters by name. */
  params: Record<string, string>;
  actor: TenantApp;
}

/** Characters an HTTP header value may carry (Node refuses the rest before sending). */
export function headerSafe(s: string): string {
  return Buffer.from(s, 'utf8')
    .toString('latin1')
    .replace(/[^\t\x20-\x7e\x80-\xff]/g, '');
}

const UNRESERVED = /[A-Za-z0-9\-._~]/;

/** Percent-encodes every UTF-16 unit, lone surrogates included (as the bytes CESU-8 would use). */
export function encodeSegment(s: string): string {
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const ch = s[i]!;
    const c = s.charCodeAt(i);
    const next = s.charCodeAt(i + 1);
    if (UNRESERVED.test(ch)) out += ch;
    else if (c >= 0xd800 && c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
      out += encodeURIComponent(s.slice(i, i + 2));
      i++;
    } else if (c >= 0xd800 && c <= 0xdfff)
      out += [0xe0 | (c >> 12), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f)]
        .map((b) => `%${b.toString(16).toUpperCase()}`)
        .join('');
    else out += encodeURIComponent(ch);
  }
  return out;
}

/** Already-encoded path text that no decoder likes. */
const RAW_SEGMENTS = [
  '%',
  '%zz',
  '%E0%A4%A',
  '%C0%AE%C0%AE',
  '%FF',
  '%00',
  '%2e%2e',
  '%2F',
  'a%2Fb',
  '%ED%A0%80',
  '..',
  '.',
  '%25',
  '%u0041',
];

function pathValue(name: string, c: Ctx): { text: string; value: string } {
  const { rng } = c;
  const kind = rng.weighted<[string, number]>([
    [72, ['own', 0]],
    [10, ['foreign', 0]],
    [6, ['unknown', 0]],
    [9, ['hostile', 0]],
    [3, ['raw', 0]],
  ] as [number, [string, number]][])[0];
  let value: string | undefined;
  if (kind === 'own') value = idOf(name, c.X, c.P, rng);
  if (kind === 'foreign') {
    value = idOf(name, c.Y, principalOf(rng, c.Y), rng);
    c.notes.push(`${name} of the other app`);
  }
  if (kind === 'hostile') {
    value = hostileString(rng).slice(0, rng.chance(0.9) ? 300 : 20_000);
    c.notes.push(`hostile ${name}`);
  }
  if (kind === 'raw') {
    const raw = rng.pick(RAW_SEGMENTS);
    c.notes.push(`raw path text ${raw} for ${name}`);
    return { text: raw, value: raw };
  }
  value ??= unknownId(name, rng);
  return { text: value === '' ? '' : encodeSegment(value), value };
}

/** Builds request `index` of a run seeded with `seed`. */
export function buildRequest(
  world: World,
  routes: Route[],
  seed: number,
  index: number,
): FuzzRequest {
  const rng = Rng.of(seed, index);
  const route = rng.pick(routes);
  const tenants = world.tenants;
  const X = rng.pick(tenants);
  const Y = tenants.find((t) => t !== X) ?? X;
  const notes: string[] = [];
  let P = principalOf(rng, X);
  // A postback names a dispatch and its principal; pick the dispatch first.
  let dispatchRef: string | undefined;
  if (route.path.endsWith('/server/consent/action')) {
    const ds = X.dispatches.filter((d) => d.postbackRequired);
    if (ds.length > 0) {
      const d = rng.pick(ds);
      dispatchRef = d.referenceId;
      P = X.principals.find((q) => q.referenceId === d.referenceId) ?? P;
    }
  }
  // Some requests are left whole (the right credential, the world's own ids, a valid body), so
  // that the deeper paths, where data could leak, are reached often enough.
  const clean = rng.chance(0.15);
  if (clean && P?.token === undefined) P = X.principals.find((q) => q.token !== undefined) ?? P;
  const c: Ctx = { rng, world, route, X, Y, P, notes, clean };
  if (clean) notes.push('clean');
  const plan: Plan = clean ? 'right' : rng.weighted(PLAN_WEIGHTS);
  /** Unless the request is clean, true with probability p. */
  const maybe = (p: number) => !clean && rng.chance(p);

  // Path.
  const params: Record<string, string> = {};
  let path = route.path;
  for (const name of route.params) {
    const v = clean
      ? { value: idOf(name, X, P, rng) ?? unknownId(name, rng), text: '' }
      : pathValue(name, c);
    if (clean) v.text = encodeSegment(v.value);
    params[name] = v.value;
    path = path.replace(`{${name}}`, v.text);
  }

  // Query.
  const pairs: [string, string][] = [];
  for (const q of route.query) {
    if (!q.required && (q.name === 'cursor' ? !maybe(0.25) : !rng.chance(0.6))) continue;
    let v: Json;
    if (q.name === 'referenceId')
      v = (clean || rng.chance(0.88) ? P : principalOf(rng, Y))?.referenceId ?? 'SVC-REF-00000000';
    else if (q.name === 'cursor')
      v = rng.chance(0.8)
        ? pickOr(rng, [...X.cursors, ...Y.cursors], 'x')
        : hostileString(rng).slice(0, 3000);
    else v = generate(q.schema, rng, () => undefined, q.name);
    pairs.push([q.name, typeof v === 'string' ? v : stringify(v)]);
  }
  if (maybe(0.25)) {
    const m = rng.pick([
      'hostile',
      'duplicate',
      'proto',
      'drop',
      'unknown',
      'raw',
      'huge',
    ] as const);
    notes.push(`query: ${m}`);
    if (m === 'hostile' && pairs.length > 0)
      pairs[rng.int(pairs.length)]![1] = hostileString(rng).slice(0, 4000);
    if (m === 'duplicate' && pairs.length > 0)
      pairs.push([rng.pick(pairs)[0], rng.pick(['1', '2', 'x', '', '-1'])]);
    if (m === 'proto')
      pairs.push([
        rng.pick([
          '__proto__',
          'constructor',
          'prototype',
          '__proto__[isAdmin]',
          'constructor.prototype.x',
        ]),
        rng.pick(['1', 'x', '{}']),
      ]);
    if (m === 'drop' && pairs.length > 0) pairs.splice(rng.int(pairs.length), 1);
    if (m === 'unknown')
      pairs.push([
        rng.pick(['appId', 'token', 'userId', 'admin', 'limit']),
        rng.pick([c.Y.appId, '1', 'true']),
      ]);
    if (m === 'huge') pairs.push(['limit', '9'.repeat(rng.range(20, 400))]);
    if (m === 'raw') pairs.push(['__raw__', rng.pick(RAW_SEGMENTS)]);
  }
  // A range the right way round, unless broken on purpose.
  const from = pairs.find(([k]) => k === 'from');
  const to = pairs.find(([k]) => k === 'to');
  if (from && to && from[1] > to[1] && !maybe(0.3)) [from[1], to[1]] = [to[1], from[1]];
  const query = pairs
    .map(([k, v]) => (k === '__raw__' ? `x=${v}` : `${encodeSegment(k)}=${encodeSegment(v)}`))
    .join('&');
  let url = query ? `${path}?${query}` : path;
  if (maybe(0.01)) {
    url = `${url}${url.includes('?') ? '&' : '?'}pad=${'a'.repeat(rng.range(8_000, 20_000))}`;
    notes.push('very long URL');
  }

  // Credentials and headers.
  const creds = credentials(c, plan);
  const headers: Record<string, string[]> = {};
  const add = (name: string, value: string) => (headers[name] ??= []).push(headerSafe(value));
  for (const cred of creds) {
    if (cred.placement === 'body') continue;
    add(cred.placement, cred.placement === 'authorization' ? headerValue(cred, rng) : cred.value);
  }
  if (maybe(0.05) && !headers.origin)
    add(
      'origin',
      rng.pick([
        X.origin,
        Y.origin,
        'null',
        'https://evil.example',
        `${X.origin}/`,
        X.origin.toUpperCase(),
      ]),
    );

  // Body.
  let method = route.method;
  let body: Buffer | undefined;
  let bodyText: string | undefined;
  const wantsBody =
    route.body !== undefined || (method !== 'GET' && rng.chance(0.3)) || maybe(0.03);
  if (wantsBody) {
    // A notice is too intricate to generate from its schema alone (translations must cover
    // its purposes): start from a valid one.
    const notice = /\/notices(\/\{noticeId\})?$/.test(route.path)
      ? noticeBody(
          route.method === 'PUT' ? (X.triggerKeys[0] ?? 'signup') : `fz_${rng.hex(6)}`,
          X.purposes,
        )
      : undefined;
    let value: Json =
      notice ?? (route.body ? generate(route.body, rng, bodyHint(c, dispatchRef)) : {});
    if (
      value &&
      typeof value === 'object' &&
      !Array.isArray(value) &&
      route.body?.properties?.siteKey
    ) {
      const site = creds.find((x) => x.kind === 'siteKey');
      if (site && site.placement === 'x-site-key' && rng.chance(0.5)) {
        // The widget also takes the site key from the body alone.
        site.placement = 'body';
        headers['x-site-key'] = (headers['x-site-key'] ?? []).filter((v) => v !== site.value);
        if (headers['x-site-key'].length === 0) delete headers['x-site-key'];
        (value as Record<string, Json>).siteKey = site.value;
      }
    }
    const rounds = clean
      ? 0
      : rng.weighted<number>([
          [45, 0],
          [35, 1],
          [14, 2],
          [6, 3],
        ]);
    for (let i = 0; i < rounds; i++) {
      const r = mutate(value, rng);
      value = r.value;
      notes.push(r.note);
    }
    bodyText = stringify(value);
    body = maybe(0.12) ? textMutation(bodyText, rng, notes) : Buffer.from(bodyText);
    bodyText = body.toString('utf8');
    const ct = maybe(0.1) ? rng.pick(CONTENT_TYPES) : 'application/json';
    if (ct !== 'application/json') notes.push(`content-type ${ct ?? '(none)'}`);
    if (ct !== undefined) add('content-type', ct);
    if (maybe(0.04)) {
      const enc = rng.pick([
        'gzip',
        'deflate',
        'gzip-garbage',
        'br-garbage',
        'x-unknown',
        'gzip, gzip',
      ] as const);
      notes.push(`content-encoding ${enc}`);
      if (enc === 'gzip') body = gzipSync(body);
      if (enc === 'deflate') body = deflateSync(body);
      if (enc === 'gzip-garbage')
        body = Buffer.concat([Buffer.from([0x1f, 0x8b, 0x08, 0x00]), body]);
      add('content-encoding', enc.replace('-garbage', ''));
    }
  }

  // Other headers.
  if (['POST', 'PUT', 'PATCH', 'DELETE'].includes(method) && rng.chance(0.2)) {
    // Even a clean request may carry one: a fresh key changes nothing.
    const k = rng.weighted<string>([
      [60, `fz-${rng.hex(16)}`],
      [clean ? 0 : 20, `fz-idem-${rng.int(4)}`],
      [
        clean ? 0 : 20,
        rng.pick(['', ' ', 'a b', '\u00e9\u00e9', 'x'.repeat(300), '__proto__', 'constructor']),
      ],
    ]);
    add('idempotency-key', k);
  }
  if (maybe(0.05))
    add(
      'x-forwarded-for',
      rng.pick([
        '1.2.3.4',
        '::1',
        'garbage',
        '1.1.1.1, 2.2.2.2',
        '999.999.999.999',
        hostileString(rng).slice(0, 200),
      ]),
    );
  if (maybe(0.05))
    add(
      'accept',
      rng.pick(['text/html', 'application/xml', '*/*;q=0', 'garbage', 'application/problem+json']),
    );
  if (maybe(0.03)) {
    const name = rng.pick([
      'authorization',
      'x-secret-key',
      'x-site-key',
      'origin',
      'content-type',
      'idempotency-key',
    ]);
    add(
      name,
      rng.pick([
        X.secretKey,
        Y.secretKey,
        `Bearer ${c.world.adminToken}`,
        X.siteKey,
        Y.origin,
        'application/json',
        'dup',
      ]),
    );
    notes.push(`duplicated ${name}`);
  }
  if (maybe(0.015)) {
    add('x-fuzz-pad', 'a'.repeat(rng.range(8_000, 20_000)));
    notes.push('huge header');
  }
  if (maybe(0.04)) {
    const m = rng.pick(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS']);
    if (m !== method) {
      notes.push(`method ${method} → ${m}`);
      method = m;
    }
  }
  if ((method === 'GET' || method === 'HEAD') && body && !rng.chance(0.2)) {
    body = undefined;
    bodyText = undefined;
    delete headers['content-type'];
    delete headers['content-encoding'];
  }
  const target = routes.find(
    (r) =>
      r.path === route.path && (r.method === method || (method === 'HEAD' && r.method === 'GET')),
  );
  const flat: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(headers)) flat[k] = v.length === 1 ? v[0]! : v;
  return {
    index,
    route,
    target,
    method,
    url,
    headers: flat,
    body,
    bodyText,
    plan,
    creds,
    notes,
    params,
    actor: X,
  };
}
