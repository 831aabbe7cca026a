import type { Express } from 'express';
import { z } from 'zod';
import { consentEventSchema, EVENT_TYPES } from '../domain/consent/events.js';
import { errorCodes } from '../errors.js';

export type Security = 'admin' | 'apiKey' | 'secretKey' | 'siteKey';

export interface RouteDoc {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** OpenAPI path, parameters in braces: `/api/v1/consents/{userId}`. */
  path: string;
  summary: string;
  tag: string;
  /** Defaults to the method and the path's words (`operationIdOf`). */
  operationId?: string;
  security?: Security[];
  body?: z.ZodType;
  query?: z.ZodObject;
  responses: Record<number, { description: string; schema?: z.ZodType; example?: unknown }>;
  /** An example request body (the main operations carry one). */
  example?: unknown;
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

/** RFC 9457 problem+json, as `sendProblem` writes it (shared/http/problem.ts). */
const problem = {
  type: 'object',
  required: ['type', 'title', 'status', 'code'],
  properties: {
    type: { type: 'string' },
    title: { type: 'string' },
    status: { type: 'integer' },
    detail: { type: 'string' },
    code: { type: 'string', enum: Object.keys(errorCodes) },
    errors: {
      type: 'array',
      items: {
        type: 'object',
        properties: { path: { type: 'string' }, message: { type: 'string' } },
      },
    },
  },
};

/**
 * Statuses every operation may answer whatever its handler does (shared/http/server.ts): the
 * JSON parser's 400 and 413 and the validation's 422 where there is a body or a query, 429 from
 * the per-address limits, 503 at capacity or while a store is down, 500 for a fault.
 */
const BODY_STATUSES = {
  400: 'Malformed JSON (SVC_BAD_JSON)',
  413: 'Body too large (SVC_PAYLOAD_TOO_LARGE)',
  422: 'Invalid body (SVC_VALIDATION_FAILED)',
};
const QUERY_STATUSES = { 422: 'Invalid query (SVC_VALIDATION_FAILED)' };
const COMMON_STATUSES = {
  429: 'Too many requests, or too many failed authentications from this address (SVC_RATE_LIMITED, with Retry-After)',
  500: 'Internal error (SVC_INTERNAL)',
  503: 'At capacity, or a backing store is unavailable (SVC_UNAVAILABLE, with Retry-After)',
};

const PROBLEM_REF = { $ref: '#/components/schemas/Problem' };
const problemContent = { 'application/problem+json': { schema: PROBLEM_REF } };

const pascal = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/**
 * `{method}{Words}` from the path, parameters as `By{Name}`, without `api` and version words:
 * `DELETE /api/v1/consents/{userId}` → `deleteConsentsByUserId`. Unique as method + path are.
 */
export function operationIdOf(method: string, path: string): string {
  const words = path
    .split(/[/\-_.]/)
    .filter((w) => w !== '' && w !== 'api' && !/^v\d+$/.test(w))
    .map((w) => {
      const param = /^\{(\w+)\}$/.exec(w);
      return param ? `By${pascal(param[1]!)}` : pascal(w);
    });
  return `${method}${words.join('')}`;
}

/** `consent.expiry.reminder` → `ConsentExpiryReminderEvent`. */
export const eventSchemaName = (type: string) => `${type.split(/[._]/).map(pascal).join('')}Event`;

type Schemas = Record<string, Record<string, unknown>>;

/** Named JSON Schemas of a registry, referencing each other through `#/components/schemas/`. */
function convert(reg: z.core.$ZodRegistry<{ id: string }>, io: 'input' | 'output'): Schemas {
  const { schemas } = z.toJSONSchema(reg, {
    unrepresentable: 'any',
    io,
    uri: (id) => `#/components/schemas/${id}`,
  }) as { schemas: Schemas };
  return Object.fromEntries(
    Object.entries(schemas).map(([id, { $schema: _s, $id: _i, ...rest }]) => [id, rest]),
  );
}

/** Names `s` in `reg` (the first name given to a schema stays) and returns its reference. */
function named(reg: z.core.$ZodRegistry<{ id: string }>, s: z.ZodType, id: string) {
  if (!reg.has(s)) reg.add(s, { id });
  return { $ref: `#/components/schemas/${reg.get(s)!.id}` };
}

function queryParams(q: z.ZodObject | undefined) {
  if (!q) return [];
  return Object.entries(q.shape).map(([name, s]) => {
    const { $schema: _drop, ...schema } = z.toJSONSchema(s as z.ZodType, {
      unrepresentable: 'any',
      io: 'input',
    }) as Record<string, unknown>;
    return {
      name,
      in: 'query',
      required: !(s as z.ZodType).safeParse(undefined).success,
      schema,
    };
  });
}

/**
 * One webhook per event type (OAS 3.1 `webhooks`): what the dispatcher posts to the app's
 * `webhookUrl` (docs/webhooks.md), each type's payload a named schema, and `ConsentEvent` the
 * union of them, discriminated by `type`.
 */
function webhookDocs(out: z.core.$ZodRegistry<{ id: string }>) {
  const webhooks: Record<string, unknown> = {};
  const refs = EVENT_TYPES.map((type) => {
    const ref = named(
      out,
      consentEventSchema.extend({ type: z.literal(type) }),
      eventSchemaName(type),
    );
    webhooks[type] = {
      post: {
        operationId: `${type.replace(/[._](\w)/g, (_m, c: string) => c.toUpperCase())}Webhook`,
        summary: `The ${type} event, signed with Standard Webhooks headers`,
        tags: ['Webhooks'],
        requestBody: { required: true, content: { 'application/json': { schema: ref } } },
        responses: {
          '2XX': { description: 'Received; any other answer is retried (docs/webhooks.md)' },
          '410': { description: 'Gone: disables the endpoint' },
        },
      },
    };
    return [type, ref.$ref] as const;
  });
  const union = {
    oneOf: refs.map(([, $ref]) => ({ $ref })),
    discriminator: { propertyName: 'type', mapping: Object.fromEntries(refs) },
  };
  return { webhooks, union };
}

/** Routes register their zod schemas here; the OpenAPI 3.1 document is generated from them. */
export class ApiDocs {
  private readonly routes: RouteDoc[] = [];
  private built: { routes: number; doc: Record<string, unknown> } | undefined;

  add(r: RouteDoc): void {
    this.routes.push(r);
  }

  document(serverUrl?: string): Record<string, unknown> {
    if (this.built?.routes !== this.routes.length)
      this.built = { routes: this.routes.length, doc: this.build() };
    return serverUrl ? { ...this.built.doc, servers: [{ url: serverUrl }] } : this.built.doc;
  }

  private build(): Record<string, unknown> {
    // Bodies are documented as clients send them (defaults optional), responses as sent.
    const inReg = z.registry<{ id: string }>();
    const outReg = z.registry<{ id: string }>();
    const ids = new Set<string>();
    const paths: Record<string, Record<string, unknown>> = {};
    for (const r of this.routes) {
      const operationId = r.operationId ?? operationIdOf(r.method, r.path);
      if (ids.has(operationId)) throw new Error(`two operations named ${operationId}`);
      ids.add(operationId);
      const name = pascal(operationId);
      const params = [...r.path.matchAll(/\{(\w+)\}/g)].map((m) => ({
        name: m[1],
        in: 'path',
        required: true,
        schema: { type: 'string' },
      }));
      const statuses = {
        ...(r.query ? QUERY_STATUSES : {}),
        ...(r.body ? BODY_STATUSES : {}),
        ...COMMON_STATUSES,
        ...Object.fromEntries(Object.entries(r.responses).map(([k, v]) => [k, v.description])),
      };
      const successes = Object.keys(r.responses).filter((s) => Number(s) < 300);
      const responses = Object.fromEntries(
        Object.entries(statuses).map(([status, description]) => {
          const resp = r.responses[Number(status)];
          const suffix = successes.length > 1 ? status : '';
          let content: unknown;
          if (resp?.schema) {
            const schema = named(outReg, resp.schema, `${name}Response${suffix}`);
            content = {
              'application/json': {
                schema,
                ...(resp.example !== undefined ? { example: resp.example } : {}),
              },
            };
          } else if (Number(status) >= 400) content = problemContent;
          return [status, { description, ...(content ? { content } : {}) }];
        }),
      );
      const op: Record<string, unknown> = {
        operationId,
        summary: r.summary,
        tags: [r.tag],
        parameters: [...params, ...queryParams(r.query)],
        responses,
      };
      if (r.body)
        op.requestBody = {
          required: true,
          content: {
            'application/json': {
              schema: named(inReg, r.body, `${name}Request`),
              ...(r.example !== undefined ? { example: r.example } : {}),
            },
          },
        };
      if (r.security) op.security = r.security.map((s) => ({ [s]: [] }));
      (paths[r.path] ??= {})[r.method] = op;
    }
    const { webhooks, union } = webhookDocs(outReg);
    return {
      openapi: '3.1.0',
      info: {
        title: 'svc-consent',
        version: '1.0.0',
        description:
          'Consent management and webhook compliance (DPDP). Errors are RFC 9457 problem+json.',
      },
      paths,
      webhooks,
      components: {
        securitySchemes,
        schemas: {
          ...convert(inReg, 'input'),
          ...convert(outReg, 'output'),
          ConsentEvent: union,
          Problem: problem,
        },
      },
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
