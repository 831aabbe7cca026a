import { randomUUID } from 'node:crypto';
import { NetworkError, ProblemError, TimeoutError, type Problem } from './errors.js';
import type { paths } from './openapi.gen.js';
import {
  DEFAULT_RETRY,
  retriableStatus,
  retryAfterMs,
  retryDelayMs,
  type RetryPolicy,
} from './retry.js';

/**
 * A typed client over fetch, its paths, parameters, bodies and answers generated from the
 * service's /openapi.json (src/openapi.gen.ts). Each call is retried on network errors, 429 and
 * 5xx (honouring Retry-After); every POST carries an Idempotency-Key, the same on each retry, so
 * a retried write is applied once.
 */

export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';
type Op<P extends keyof paths, M extends Method> = NonNullable<paths[P][M]>;
/** The paths that answer `M`. */
export type PathsOf<M extends Method> = {
  [P in keyof paths]: [NonNullable<paths[P][M]>] extends [never] ? never : P;
}[keyof paths];

type PathParams<O> = O extends { parameters: { path: infer P } } ? { path: P } : { path?: never };
type QueryParams<O> = O extends { parameters: { query?: infer Q } }
  ? [NonNullable<Q>] extends [never]
    ? { query?: never }
    : { query?: NonNullable<Q> }
  : { query?: never };
type JsonBody<O> = O extends { requestBody: { content: { 'application/json': infer B } } }
  ? { body: B }
  : O extends { requestBody?: { content: { 'application/json': infer B } } }
    ? { body?: B }
    : { body?: never };

/** What a call sends besides its path: parameters, body, and per-call controls. */
export type CallOptions<O> = PathParams<O> &
  QueryParams<O> &
  JsonBody<O> & {
    signal?: AbortSignal;
    /** Per attempt; the client's `timeoutMs` by default. */
    timeoutMs?: number;
    /** For a POST: the key to use instead of a fresh one (e.g. one derived from your own id). */
    idempotencyKey?: string;
    headers?: Record<string, string>;
  };

type Success<O> = O extends { responses: infer R }
  ? {
      [S in keyof R]: S extends 200 | 201 | 202 | 204
        ? R[S] extends { content: { 'application/json': infer B } }
          ? B
          : undefined
        : never;
    }[keyof R]
  : never;

/** The JSON a successful call answers. */
export type Answer<P extends keyof paths, M extends Method> = Success<Op<P, M>>;

export interface ClientOptions {
  /** e.g. `http://localhost:8080`. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer …`: an API key (svc_ak_…), or the admin token. */
  apiKey?: string;
  /** Sent as `x-secret-key`: the app's secret key (public API, postbacks). */
  secretKey?: string;
  /** Per attempt, default 10 s. */
  timeoutMs?: number;
  retry?: Partial<RetryPolicy>;
  fetch?: typeof fetch;
}

type CursorPaged = { items: unknown[]; nextCursor: string | null };
/** The paths whose GET answers a cursor-paged list (`{ items, nextCursor }`). */
export type PagedPaths = {
  [P in PathsOf<'get'>]: Answer<P, 'get'> extends CursorPaged ? P : never;
}[PathsOf<'get'>];
type Item<P extends keyof paths> = Answer<P, 'get'> extends { items: (infer I)[] } ? I : never;

const sleep = (ms: number, signal: AbortSignal | undefined) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error);
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal!.reason as Error);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });

function urlOf(baseUrl: string, template: string, o: { path?: object; query?: object }): string {
  const path = template.replace(/\{(\w+)\}/g, (_m, name: string) => {
    const v = (o.path as Record<string, unknown> | undefined)?.[name];
    if (v === undefined) throw new TypeError(`path parameter ${name} is missing`);
    return encodeURIComponent(String(v));
  });
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(o.query ?? {}))
    if (v !== undefined && v !== null) q.set(k, String(v));
  const qs = q.toString();
  return `${baseUrl.replace(/\/+$/, '')}${path}${qs ? `?${qs}` : ''}`;
}

export class SvcClient {
  private readonly retry: RetryPolicy;
  private readonly fetch: typeof fetch;

  constructor(private readonly o: ClientOptions) {
    this.retry = { ...DEFAULT_RETRY, ...o.retry };
    this.fetch = o.fetch ?? globalThis.fetch;
  }

  get<P extends PathsOf<'get'>>(path: P, ...[o]: OptionalIfEmpty<Op<P, 'get'>>) {
    return this.call<P, 'get'>('get', path, o);
  }
  post<P extends PathsOf<'post'>>(path: P, ...[o]: OptionalIfEmpty<Op<P, 'post'>>) {
    return this.call<P, 'post'>('post', path, o);
  }
  put<P extends PathsOf<'put'>>(path: P, ...[o]: OptionalIfEmpty<Op<P, 'put'>>) {
    return this.call<P, 'put'>('put', path, o);
  }
  patch<P extends PathsOf<'patch'>>(path: P, ...[o]: OptionalIfEmpty<Op<P, 'patch'>>) {
    return this.call<P, 'patch'>('patch', path, o);
  }
  delete<P extends PathsOf<'delete'>>(path: P, ...[o]: OptionalIfEmpty<Op<P, 'delete'>>) {
    return this.call<P, 'delete'>('delete', path, o);
  }

  /** Every item of a cursor-paged list, page after page, as `for await (const x of …)`. */
  async *paginate<P extends PagedPaths>(
    path: P,
    ...[o]: OptionalIfEmpty<Op<P, 'get'>>
  ): AsyncGenerator<Item<P>, void, undefined> {
    const opts = (o ?? {}) as { query?: Record<string, unknown> };
    let cursor: string | null = null;
    do {
      const query = { ...opts.query, ...(cursor ? { cursor } : {}) };
      const page = (await this.call('get', path, { ...opts, query } as never)) as CursorPaged;
      for (const item of page.items) yield item as Item<P>;
      cursor = page.nextCursor;
    } while (cursor);
  }

  private async call<P extends keyof paths, M extends Method>(
    method: M,
    path: P,
    options: unknown,
  ): Promise<Answer<P, M>> {
    const o = (options ?? {}) as CallOptions<unknown> & {
      path?: object;
      query?: object;
      body?: unknown;
    };
    const url = urlOf(this.o.baseUrl, path as string, o);
    const headers: Record<string, string> = {
      accept: 'application/json, application/problem+json',
      ...(this.o.apiKey ? { authorization: `Bearer ${this.o.apiKey}` } : {}),
      ...(this.o.secretKey ? { 'x-secret-key': this.o.secretKey } : {}),
      ...(o.body !== undefined ? { 'content-type': 'application/json' } : {}),
      // One key for the call, so each retry is the same request to the service.
      ...(method === 'post' ? { 'idempotency-key': o.idempotencyKey ?? randomUUID() } : {}),
      ...o.headers,
    };
    const body = o.body !== undefined ? JSON.stringify(o.body) : undefined;
    const timeoutMs = o.timeoutMs ?? this.o.timeoutMs ?? 10_000;
    for (let n = 0; ; n++) {
      const last = n >= this.retry.retries;
      let res: Response;
      const timeout = AbortSignal.timeout(timeoutMs);
      try {
        res = await this.fetch(url, {
          method: method.toUpperCase(),
          headers,
          ...(body !== undefined ? { body } : {}),
          signal: o.signal ? AbortSignal.any([o.signal, timeout]) : timeout,
        });
      } catch (err) {
        if (o.signal?.aborted) throw o.signal.reason;
        const error = timeout.aborted
          ? new TimeoutError(
              `${method.toUpperCase()} ${path as string}: no answer in ${timeoutMs} ms`,
              { cause: err },
            )
          : new NetworkError(
              `${method.toUpperCase()} ${path as string}: ${(err as Error).message}`,
              { cause: err },
            );
        if (last) throw error;
        await sleep(retryDelayMs(this.retry, n, undefined)!, o.signal);
        continue;
      }
      const text = await res.text();
      if (res.ok) return (text ? JSON.parse(text) : undefined) as Answer<P, M>;
      const wait = retriableStatus(res.status)
        ? retryDelayMs(this.retry, n, retryAfterMs(res.headers.get('retry-after'), Date.now()))
        : undefined;
      if (last || wait === undefined) {
        let problem: Problem | undefined;
        try {
          problem = JSON.parse(text) as Problem;
        } catch {
          problem = undefined;
        }
        throw new ProblemError(res.status, problem, text);
      }
      await sleep(wait, o.signal);
    }
  }
}

/** Options may be left out when nothing in them is required. */
// The empty object: options may be left out when none of their fields is required.
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
type OptionalIfEmpty<O> = {} extends CallOptions<O> ? [o?: CallOptions<O>] : [o: CallOptions<O>];

export function createClient(o: ClientOptions): SvcClient {
  return new SvcClient(o);
}
