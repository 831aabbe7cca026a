import { Ajv2020 } from 'ajv/dist/2020.js';

/**
 * Checks HTTP responses against the OpenAPI document that the service serves: the status must be
 * documented for the operation, and a JSON body must match the documented schema (Ajv, JSON
 * Schema 2020-12 as OAS 3.1 uses it). Formats are not checked (no format plugin). Requests to
 * paths the document does not describe (pages, /healthz) are not checked.
 */

interface Operation {
  responses: Record<string, { content?: Record<string, { schema?: unknown }> }>;
}
export interface OpenApiDoc {
  paths: Record<string, Record<string, Operation>>;
}

export interface ObservedResponse {
  method: string;
  /** The request path, query allowed. */
  path: string;
  status: number;
  contentType: string | null;
  /** The response text. */
  text: string;
}

const pointer = (...parts: string[]) =>
  parts.map((p) => `/${p.replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');

/** A checker for one document: the errors of a response, none when it matches. */
export function responseChecker(doc: OpenApiDoc): (r: ObservedResponse) => string[] {
  const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
  ajv.addSchema(doc as object, 'openapi');
  const templates = Object.keys(doc.paths)
    .map((t) => ({
      t,
      re: new RegExp(`^${t.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{\w+\}/g, '[^/]+')}$`),
      // A literal segment beats a parameter: /apps/recover before /apps/{appId}.
      params: (t.match(/\{/g) ?? []).length,
    }))
    .sort((a, b) => a.params - b.params);
  const compiled = new Map<string, ReturnType<typeof ajv.compile>>();

  return (r) => {
    const path = decodeURI(r.path.split('?')[0]!);
    const method = r.method.toLowerCase();
    const template = templates.find((x) => x.re.test(path) && doc.paths[x.t]![method])?.t;
    if (!template) return [];
    const op = doc.paths[template]![method]!;
    const status = String(r.status);
    const key = [status, `${status[0]}XX`, 'default'].find((k) => op.responses[k]);
    const where = `${r.method.toUpperCase()} ${template} → ${status}`;
    if (!key) return [`${where}: status not documented`];
    const type = r.contentType?.split(';')[0]?.trim() ?? '';
    if (!/json$/.test(type)) return [];
    const content = op.responses[key]!.content;
    if (!content) return [];
    if (!content[type]) return [`${where}: ${type} not documented (${Object.keys(content)})`];
    if (content[type]!.schema === undefined) return [];
    let body: unknown;
    try {
      body = JSON.parse(r.text);
    } catch {
      return [`${where}: ${type} body is not JSON`];
    }
    const ref = `openapi#${pointer('paths', template, method, 'responses', key, 'content', type, 'schema')}`;
    let validate = compiled.get(ref);
    if (!validate) compiled.set(ref, (validate = ajv.compile({ $ref: ref })));
    if (validate(body)) return [];
    return (validate.errors ?? []).map(
      (e) => `${where}: ${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`,
    );
  };
}

const checkers = new Map<string, Promise<(r: ObservedResponse) => string[]>>();

/** The checker of the document served at `${baseUrl}/openapi.json`, fetched once per base URL. */
export function servedChecker(baseUrl: string) {
  let c = checkers.get(baseUrl);
  if (!c) {
    c = unchecked(`${baseUrl}/openapi.json`).then(async (res) => {
      if (!res.ok) throw new Error(`${baseUrl}/openapi.json answered ${res.status}`);
      return responseChecker((await res.json()) as OpenApiDoc);
    });
    checkers.set(baseUrl, c);
  }
  return c;
}

/** The origins of the service processes the tests started: their answers are checked. */
const documented = new Set<string>();

/** Marks a started process's answers as checked against its /openapi.json. */
export function documentOrigin(url: string): void {
  documented.add(new URL(url).origin);
}

const unchecked = globalThis.fetch;

/**
 * `fetch` for integration tests (test/helpers/documented-setup.ts makes it the global one):
 * the same answer, after checking an answer of a process the tests started against the
 * document it serves; one that does not match throws, so the test fails where the document
 * drifted. Other origins (receivers, Prometheus) are fetched as they are.
 */
export async function documentedFetch(
  input: string | URL | Request,
  init: RequestInit = {},
): Promise<Response> {
  const res = await unchecked(input, init);
  const url = new URL(input instanceof Request ? input.url : input);
  if (!documented.has(url.origin)) return res;
  const text = await res.clone().text();
  const method = init.method ?? (input instanceof Request ? input.method : 'GET');
  const errors = (await servedChecker(url.origin))({
    method,
    path: `${url.pathname}${url.search}`,
    status: res.status,
    contentType: res.headers.get('content-type'),
    text,
  });
  if (errors.length > 0)
    throw new Error(
      `response differs from /openapi.json:\n${errors.join('\n')}\n${text.slice(0, 500)}`,
    );
  return res;
}
