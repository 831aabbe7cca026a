import type { Express } from 'express';
import { z } from 'zod';

export type Security = 'admin' | 'apiKey' | 'secretKey' | 'siteKey';

export interface RouteDoc {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** OpenAPI path, parameters in braces: `/api/v1/consents/{userId}`. */
  path: string;
  summary: string;
  tag: string;
  security?: Security[];
  body?: z.ZodType;
  query?: z.ZodObject;
  responses: Record<number, { description: string; schema?: z.ZodType }>;
}

const securitySchemes = {
  admin: { type: 'http', scheme: 'bearer', description: 'SVC_ADMIN_TOKEN' },
  apiKey: { type: 'http', scheme: 'bearer', description: 'API key svc_ak_… with scopes' },
  secretKey: {
    type: 'apiKey',
    in: 'header',
    name: 'x-secret-key',
    description: 'App secret key svc_sk_…',
  },
  siteKey: {
    type: 'apiKey',
    in: 'header',
    name: 'X-Site-Key',
    description:
      'Public site key APP_… plus origin allowlist; on the public consent API also Authorization: Bearer svc_pt_… (a principal token)',
  },
};

const problem = {
  type: 'object',
  properties: {
    type: { type: 'string' },
    title: { type: 'string' },
    status: { type: 'integer' },
    detail: { type: 'string' },
    code: { type: 'string' },
    errors: {
      type: 'array',
      items: {
        type: 'object',
        properties: { path: { type: 'string' }, message: { type: 'string' } },
      },
    },
  },
};

function schemaOf(s: z.ZodType): unknown {
  const { $schema: _drop, ...rest } = z.toJSONSchema(s, {
    unrepresentable: 'any',
    io: 'input',
  }) as Record<string, unknown>;
  return rest;
}

/** Routes register their zod schemas here; the OpenAPI 3.1 document is generated from them. */
export class ApiDocs {
  private readonly routes: RouteDoc[] = [];

  add(r: RouteDoc): void {
    this.routes.push(r);
  }

  document(serverUrl?: string): Record<string, unknown> {
    const paths: Record<string, Record<string, unknown>> = {};
    for (const r of this.routes) {
      const params = [...r.path.matchAll(/\{(\w+)\}/g)].map((m) => ({
        name: m[1],
        in: 'path',
        required: true,
        schema: { type: 'string' },
      }));
      const query = r.query
        ? Object.entries(r.query.shape).map(([name, s]) => ({
            name,
            in: 'query',
            required: !(s as z.ZodType).safeParse(undefined).success,
            schema: schemaOf(s as z.ZodType),
          }))
        : [];
      const op: Record<string, unknown> = {
        summary: r.summary,
        tags: [r.tag],
        parameters: [...params, ...query],
        responses: Object.fromEntries(
          Object.entries(r.responses).map(([status, resp]) => [
            status,
            {
              description: resp.description,
              ...(resp.schema
                ? { content: { 'application/json': { schema: schemaOf(resp.schema) } } }
                : Number(status) >= 400
                  ? { content: { 'application/problem+json': { schema: problem } } }
                  : {}),
            },
          ]),
        ),
      };
      if (r.body)
        op.requestBody = {
          required: true,
          content: { 'application/json': { schema: schemaOf(r.body) } },
        };
      if (r.security) op.security = r.security.map((s) => ({ [s]: [] }));
      (paths[r.path] ??= {})[r.method] = op;
    }
    return {
      openapi: '3.1.0',
      info: {
        title: 'svc-consent',
        version: '1.0.0',
        description:
          'Consent management and webhook compliance (DPDP). Errors are RFC 9457 problem+json.',
      },
      ...(serverUrl ? { servers: [{ url: serverUrl }] } : {}),
      paths,
      components: { securitySchemes, schemas: { Problem: problem } },
    };
  }
}

const esc = (s: string) => s.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);

/** Serves /openapi.json and a self-contained /docs page (no CDN: works offline). */
export function mountDocs(app: Express, docs: ApiDocs): void {
  app.get('/openapi.json', (req, res) => {
    res.json(docs.document(`${req.protocol}://${req.get('host') ?? 'localhost'}`));
  });
  app.get('/docs', (_req, res) => {
    const doc = docs.document() as {
      paths: Record<string, Record<string, { summary: string; tags: string[] }>>;
    };
    const rows = Object.entries(doc.paths)
      .flatMap(([path, ops]) =>
        Object.entries(ops).map(
          ([method, op]) =>
            `<tr><td>${esc(op.tags[0] ?? '')}</td><td><code>${method.toUpperCase()}</code></td><td><code>${esc(path)}</code></td><td>${esc(op.summary)}</td></tr>`,
        ),
      )
      .join('\n');
    res.type('html')
      .send(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>svc-consent API</title>
<style>body{font-family:system-ui,sans-serif;margin:2rem;max-width:70rem}td{padding:.3rem .6rem;border-bottom:1px solid #ddd}code{font-size:.9rem}</style></head>
<body><h1>svc-consent API</h1><p>Machine-readable document: <a href="/openapi.json">/openapi.json</a> (OpenAPI 3.1). Errors are <code>application/problem+json</code>.</p>
<table><thead><tr><th>Area</th><th>Method</th><th>Path</th><th>Summary</th></tr></thead><tbody>
${rows}
</tbody></table></body></html>`);
  });
}
