import type { Express } from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allServices } from '../../bin/modules.js';
import { testProcess } from '../helpers/stack.js';
import { appServedBy } from '../../shared/http/server.js';

/**
 * Every route is documented: routes register their OpenAPI docs (`rt.docs.add`) apart from
 * their handlers, so nothing but this test ties the two together. It starts every service of
 * `npm start` through the same host (`startProcess`, bin/process.ts), walks the Express app's
 * router stack and compares each API route with the operations of the served /openapi.json.
 * An undocumented route is missing from /docs and from the fuzzer's routes; a documented one
 * with no handler promises an endpoint that answers 404.
 */

interface Layer {
  rawPath?: string | RegExp | (string | RegExp)[];
  route?: { path: string | RegExp | (string | RegExp)[]; methods: Record<string, boolean> };
  handle: { stack?: Layer[] };
}

const HTTP_METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

const list = <T>(x: T | T[]): T[] => (Array.isArray(x) ? x : [x]);

/** Joins a mount path and a route path as Express matches them (`/` mounts add nothing). */
function join(base: string, path: string | RegExp): string {
  if (path instanceof RegExp) return `${base}${String(path)}`;
  const joined = `${base}${path === '/' ? '' : path}`.replace(/\/{2,}/g, '/');
  return joined === '' ? '/' : joined;
}

/** `METHOD /path` for every route handler in the stack, nested routers included. */
function expressRoutes(stack: Layer[], base = ''): string[] {
  const out: string[] = [];
  for (const layer of stack) {
    if (layer.route) {
      const methods = Object.keys(layer.route.methods).map((m) => (m === '_all' ? 'all' : m));
      for (const p of list(layer.route.path))
        for (const m of methods) out.push(`${m.toUpperCase()} ${join(base, p)}`);
    } else if (Array.isArray(layer.handle.stack)) {
      for (const p of list(layer.rawPath ?? '/'))
        out.push(...expressRoutes(layer.handle.stack, join(base, p)));
    }
  }
  return out;
}

/** Express's `/:param` as OpenAPI's `/{param}`. */
const openApiPath = (path: string) => path.replace(/:(\w+)/g, '{$1}');

type RunningProcess = Awaited<ReturnType<typeof testProcess>>;

/** The app a process serves (`listen` made its server). */
const appOf = (p: RunningProcess) => appServedBy(p.server)!;

let p: RunningProcess;
let routes: string[];
let documented: string[];

beforeAll(async () => {
  p = await testProcess('route-docs', allServices);
  const app = appOf(p) as Express & { router: { stack: Layer[] } };
  routes = [...new Set(expressRoutes(app.router.stack).map(openApiPath))].sort();
  const doc = (await (await fetch(`${p.url}/openapi.json`)).json()) as {
    paths: Record<string, Record<string, unknown>>;
  };
  documented = Object.entries(doc.paths)
    .flatMap(([path, ops]) =>
      Object.keys(ops)
        .filter((m) => (HTTP_METHODS as readonly string[]).includes(m))
        .map((m) => `${m.toUpperCase()} ${path}`),
    )
    .sort();
});

afterAll(async () => {
  await p?.close();
});

describe('route documentation', () => {
  it('finds the routes of every service (the walk itself works)', () => {
    expect(routes).toContain('POST /api/v1/admin/apps');
    expect(routes).toContain('GET /api/public/consents/my-transactions/{transactionId}');
    expect(routes).toContain('GET /healthz');
    expect(documented.length).toBeGreaterThan(20);
  });

  it('documents every API route in /openapi.json', () => {
    // The JSON APIs: /api/… and the hosted portal's /portal/api/…. OPTIONS routes are CORS
    // preflights, answered for the operations they precede, not operations of their own.
    const api = routes.filter(
      (r) => /^\w+ (\/portal)?\/api\//.test(r) && !r.startsWith('OPTIONS '),
    );
    const undocumented = api.filter((r) => !documented.includes(r));
    expect(undocumented, 'routes with a handler and no rt.docs.add').toEqual([]);
  });

  it('documents no route that has no handler', () => {
    const unhandled = documented.filter((d) => !routes.includes(d));
    expect(unhandled, 'documented operations that no route answers').toEqual([]);
  });
});
