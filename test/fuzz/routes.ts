import type { Schema } from './values.js';

/** The routes of the service's OpenAPI document (GET /openapi.json), as the fuzzer uses them. */

export type Security = 'admin' | 'apiKey' | 'secretKey' | 'siteKey' | 'portal' | 'public';

export interface QueryParam {
  name: string;
  required: boolean;
  schema: Schema;
}

export interface Route {
  /** `GET /api/v1/consents/{userId}` */
  key: string;
  method: string;
  path: string;
  params: string[];
  query: QueryParam[];
  body: Schema | undefined;
  /** Credentials the route takes, from the document (the portal's token is not declared there). */
  security: Security[];
  /** The API key scope the route needs, when it takes an API key. */
  scope: string | undefined;
}

interface Operation {
  parameters?: { name: string; in: string; required?: boolean; schema?: Schema }[];
  requestBody?: { content?: Record<string, { schema?: Schema }> };
  security?: Record<string, unknown>[];
}

/** `schema` with every `#/components/schemas/…` reference replaced by what it names. */
function inlined(schema: unknown, named: Record<string, unknown>): unknown {
  if (Array.isArray(schema)) return schema.map((s) => inlined(s, named));
  if (typeof schema !== 'object' || schema === null) return schema;
  const ref = (schema as { $ref?: unknown }).$ref;
  if (typeof ref === 'string' && ref.startsWith('#/components/schemas/'))
    return inlined(named[ref.slice('#/components/schemas/'.length)], named);
  return Object.fromEntries(Object.entries(schema).map(([k, v]) => [k, inlined(v, named)]));
}

export function routesOf(doc: {
  paths?: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, unknown> };
}): Route[] {
  const named = doc.components?.schemas ?? {};
  const out: Route[] = [];
  for (const [path, ops] of Object.entries(doc.paths ?? {})) {
    for (const [m, op] of Object.entries(ops)) {
      const method = m.toUpperCase();
      const declared = (op.security ?? []).flatMap((s) => Object.keys(s)) as Security[];
      const security: Security[] =
        declared.length > 0 ? declared : path.startsWith('/portal/api/') ? ['portal'] : ['public'];
      out.push({
        key: `${method} ${path}`,
        method,
        path,
        params: [...path.matchAll(/\{(\w+)\}/g)].map((x) => x[1]!),
        query: (op.parameters ?? [])
          .filter((p) => p.in === 'query')
          .map((p) => ({
            name: p.name,
            required: p.required === true,
            schema: p.schema ?? { type: 'string' },
          })),
        body: inlined(op.requestBody?.content?.['application/json']?.schema, named) as
          Schema | undefined,
        security,
        scope: scopeOf(method, path, security),
      });
    }
  }
  return out;
}

/** The scope the record and ledger APIs ask of an API key (docs/api.md, Areas and credentials). */
function scopeOf(method: string, path: string, security: Security[]): string | undefined {
  if (!security.includes('apiKey')) return undefined;
  if (path.startsWith('/api/v1/ledger')) return 'ledger:read';
  // Grievances take the record API's key and scopes.
  if (path.startsWith('/api/v1/consents') || path.startsWith('/api/v1/grievances'))
    return method === 'GET' ? 'consents:read' : 'consents:write';
  return undefined;
}
