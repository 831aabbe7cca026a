import { gzipSync } from 'node:zlib';
import type { Cred } from './credentials.js';
import type { FuzzRequest } from './request.js';
import type { Route } from './routes.js';
import type { World } from './world.js';

/**
 * Fixed requests sent before the generated ones, one per kind of failure the fuzzer has found
 * (see docs/security.md, "Fuzz suite"), so a short run checks each of them whatever the seed
 * draws. Indexes are negative (-1, -2, …) in the report.
 */

interface Probe {
  name: string;
  method: string;
  /** An OpenAPI path (the route) and the URL actually sent. */
  route: string;
  url: (w: World) => string;
  headers: (w: World) => Record<string, string>;
  body?: (w: World) => Buffer;
}

const A = (w: World) => w.tenants[0]!;
const apiKey = (w: World, scope: string) => ({ authorization: `Bearer ${w.key(A(w), scope).key}` });
const json = { 'content-type': 'application/json' };

const PROBES: Probe[] = [
  {
    name: 'path parameter that is not percent-encoded UTF-8 (truncated sequence)',
    method: 'GET',
    route: '/api/v1/consents/{userId}',
    url: () => '/api/v1/consents/%E0%A4%A',
    headers: (w) => apiKey(w, 'consents:read'),
  },
  {
    name: 'path parameter holding a lone surrogate (CESU-8 bytes)',
    method: 'POST',
    route: '/api/public/consents/my-transactions/{transactionId}/erase',
    url: () => '/api/public/consents/my-transactions/%ED%A0%80/erase',
    headers: (w) => ({ 'x-secret-key': A(w).secretKey }),
  },
  {
    name: 'gzip content-encoding on a body that is not gzip',
    method: 'POST',
    route: '/api/v1/consents',
    url: () => '/api/v1/consents',
    headers: (w) => ({ ...apiKey(w, 'consents:write'), ...json, 'content-encoding': 'gzip' }),
    body: () => Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0x7b, 0x7d]),
  },
  {
    name: 'gzip body that inflates past the body limit',
    method: 'POST',
    route: '/api/v1/consents',
    url: () => '/api/v1/consents',
    headers: (w) => ({ ...apiKey(w, 'consents:write'), ...json, 'content-encoding': 'gzip' }),
    body: () => gzipSync(Buffer.from(`{"userId":"${'a'.repeat(200_000)}"}`)),
  },
  {
    name: 'JSON nested 20,000 deep with an Idempotency-Key (the request is hashed)',
    method: 'POST',
    route: '/api/v1/consents',
    url: () => '/api/v1/consents',
    headers: (w) => ({
      ...apiKey(w, 'consents:write'),
      ...json,
      'idempotency-key': `fz-deep-${Date.now()}`,
    }),
    body: () => Buffer.from(`{"consents":${'['.repeat(20_000)}${']'.repeat(20_000)}}`),
  },
  {
    name: 'JSON nested 20,000 deep in a public API body',
    method: 'POST',
    route: '/api/public/consents/my-transactions/bulk/revoke',
    url: () => '/api/public/consents/my-transactions/bulk/revoke',
    headers: (w) => ({
      'x-secret-key': A(w).secretKey,
      ...json,
      'idempotency-key': `fz-deep2-${Date.now()}`,
    }),
    body: () => Buffer.from(`{"transactionIds":${'['.repeat(20_000)}${']'.repeat(20_000)}}`),
  },
  {
    name: 'request headers over 16 KB',
    method: 'GET',
    route: '/api/v1/consents/{userId}',
    url: () => '/api/v1/consents/nobody',
    headers: (w) => ({ ...apiKey(w, 'consents:read'), 'x-fuzz-pad': 'a'.repeat(17_000) }),
  },
  {
    name: 'HEAD with request headers over 16 KB (the answer may carry no body)',
    method: 'HEAD',
    route: '/api/v1/widget/config/{processId}',
    url: (w) => `/api/v1/widget/config/${A(w).triggerKeys[0]}`,
    headers: (w) => ({
      'x-site-key': A(w).siteKey,
      origin: A(w).origin,
      'x-fuzz-pad': 'a'.repeat(17_000),
    }),
  },
  {
    name: 'prototype keys as JSON keys',
    method: 'POST',
    route: '/api/v1/consents',
    url: () => '/api/v1/consents',
    headers: (w) => ({ ...apiKey(w, 'consents:write'), ...json }),
    body: () =>
      Buffer.from(
        '{"userId":"fz-proto","email":"p@fuzz.example","consents":{"__proto__":true,"constructor":true,"prototype":false},"__proto__":{"isAdmin":true}}',
      ),
  },
];

/** The probes as fuzz requests (the world names the credentials). */
export function probeRequests(world: World, routes: Route[]): FuzzRequest[] {
  return PROBES.map((p, i) => {
    const method = p.method === 'HEAD' ? 'GET' : p.method;
    const route = routes.find((r) => r.method === method && r.path === p.route);
    if (!route)
      throw new Error(`fuzz probe "${p.name}": no route ${p.method} ${p.route} in /openapi.json`);
    const body = p.body?.(world);
    const creds: Cred[] = [];
    return {
      index: -(i + 1),
      route,
      target: route,
      method: p.method,
      url: p.url(world),
      headers: p.headers(world),
      body,
      bodyText: body?.toString('utf8'),
      plan: 'right',
      creds,
      notes: [`probe: ${p.name}`],
      params: {},
      actor: A(world),
    };
  });
}
