import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { checkUrl, guardedLookup, SSRF_CODE, type DestinationPolicy } from './guard.js';
import type { ErrorClass } from '../domain/ledger/delivery.js';
import { classifyIp, parseIp, type AddressCategory } from '../net/ip.js';

/** The ledger keeps at most this much of a response body. */
export const EXCERPT_BYTES = 4096;

export interface PostOptions {
  url: string;
  headers: Record<string, string>;
  body: string;
  policy: DestinationPolicy;
  timeoutMs: number;
  /** Aborts the request (shutdown); the result then has `aborted` set and must not be recorded. */
  signal?: AbortSignal;
}

export interface AttemptResult {
  ok: boolean;
  startedAtMs: number;
  durationMs: number;
  statusCode?: number;
  errorClass?: ErrorClass;
  errorMessage?: string;
  responseExcerpt: string;
  /** The category of the address that answered (`global` for a public one); absent without one. */
  peer?: AddressCategory;
  retryAfter?: string;
  /** True when no connection was attempted (refused or invalid destination). */
  refused?: boolean;
  aborted?: boolean;
}

class TimeoutError extends Error {
  readonly code = 'ETIMEOUT_ATTEMPT';
}
class AbortedError extends Error {
  readonly code = 'EABORTED_ATTEMPT';
}

const TLS_CODE =
  /^(ERR_TLS|ERR_SSL|CERT_|UNABLE_TO_|DEPTH_ZERO|SELF_SIGNED|HOSTNAME_MISMATCH|ERR_OSSL)/;

export function classifyError(err: unknown): ErrorClass {
  const e = err as { code?: string } | undefined;
  const code = e?.code ?? '';
  if (err instanceof TimeoutError) return 'timeout';
  if (code === SSRF_CODE) return 'ssrf_refused';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_NODATA') return 'dns';
  if (TLS_CODE.test(code)) return 'tls';
  return 'connection';
}

/** UTF-8 text of at most `max` bytes (a cut multi-byte character is dropped, not mangled). */
function excerptOf(chunks: Buffer[], max = EXCERPT_BYTES): string {
  let text = Buffer.concat(chunks).subarray(0, max).toString('utf8');
  while (Buffer.byteLength(text) > max) text = text.slice(0, -1);
  return text.replace(/\uFFFD+$/, '');
}

/**
 * Webhook POSTs with keep-alive pools per destination and policy, the SSRF guard at connect
 * time, one deadline for the whole attempt, redirects never followed and response bodies
 * read up to 4 KiB (a longer body closes the connection instead of being drained).
 */
export class WebhookClient {
  private readonly agents = new Map<string, http.Agent>();

  constructor(
    private readonly o: {
      maxSocketsPerDestination: number;
      /** Pools kept at most; the least recently used one is closed beyond it. */
      maxDestinations?: number;
    },
  ) {}

  private agentFor(url: URL, policy: DestinationPolicy): http.Agent {
    const key = `${policy.name}|${url.protocol}//${url.host}`;
    const found = this.agents.get(key);
    if (found) {
      // Re-insert: Map order is the recency order used for eviction.
      this.agents.delete(key);
      this.agents.set(key, found);
      return found;
    }
    const opts = {
      keepAlive: true,
      maxSockets: this.o.maxSocketsPerDestination,
      maxFreeSockets: this.o.maxSocketsPerDestination,
      scheduling: 'lifo' as const,
    };
    const agent = url.protocol === 'https:' ? new https.Agent(opts) : new http.Agent(opts);
    this.agents.set(key, agent);
    if (this.agents.size > (this.o.maxDestinations ?? 1000)) {
      const [oldKey, old] = this.agents.entries().next().value as [string, http.Agent];
      this.agents.delete(oldKey);
      old.destroy();
    }
    return agent;
  }

  post(o: PostOptions): Promise<AttemptResult> {
    const startedAtMs = Date.now();
    const t0 = performance.now();
    const elapsed = () => Math.round(performance.now() - t0);
    const checked = checkUrl(o.url, o.policy);
    if (!checked.ok) {
      return Promise.resolve({
        ok: false,
        startedAtMs,
        durationMs: elapsed(),
        errorClass: checked.errorClass,
        errorMessage: checked.message,
        responseExcerpt: '',
        refused: true,
      });
    }
    const url = checked.url;
    const body = Buffer.from(o.body, 'utf8');
    const mod = url.protocol === 'https:' ? https : http;
    return new Promise<AttemptResult>((resolve) => {
      let settled = false;
      let res: IncomingMessage | undefined;
      const chunks: Buffer[] = [];
      let size = 0;
      const finish = (r: Omit<AttemptResult, 'startedAtMs' | 'durationMs' | 'responseExcerpt'>) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        o.signal?.removeEventListener('abort', onAbort);
        resolve({ startedAtMs, durationMs: elapsed(), responseExcerpt: excerptOf(chunks), ...r });
      };
      let peer: AddressCategory | undefined;
      const fromResponse = (r: IncomingMessage) => {
        const status = r.statusCode ?? 0;
        const retryAfter = r.headers['retry-after'];
        const ok = status >= 200 && status < 300;
        return {
          ok,
          statusCode: status,
          ...(peer ? { peer } : {}),
          ...(ok
            ? {}
            : { errorClass: (status >= 300 && status < 400 ? 'redirect' : 'http') as ErrorClass }),
          ...(typeof retryAfter === 'string' ? { retryAfter } : {}),
        };
      };
      const fail = (err: unknown) => {
        if (err instanceof AbortedError)
          return finish({ ok: false, errorClass: 'connection', aborted: true });
        // The status line arrived in time: the outcome stands, only the excerpt is cut short.
        if (res) return finish(fromResponse(res));
        finish({
          ok: false,
          errorClass: classifyError(err),
          errorMessage: (err as Error)?.message ?? String(err),
        });
      };
      const req = mod.request(url, {
        method: 'POST',
        agent: this.agentFor(url, o.policy),
        lookup: guardedLookup(o.policy),
        headers: { ...o.headers, 'content-length': String(body.length) },
      });
      const timer = setTimeout(() => {
        const err = new TimeoutError(`no complete answer within ${o.timeoutMs} ms`);
        req.destroy(err);
        res?.destroy(err);
      }, o.timeoutMs);
      const onAbort = () => {
        req.destroy(new AbortedError('attempt aborted'));
        res?.destroy(new AbortedError('attempt aborted'));
      };
      if (o.signal?.aborted) onAbort();
      o.signal?.addEventListener('abort', onAbort, { once: true });
      req.on('error', fail);
      req.on('response', (r) => {
        res = r;
        const ip = parseIp(r.socket?.remoteAddress ?? '');
        peer = ip ? classifyIp(ip) : 'reserved';
        r.on('data', (c: Buffer) => {
          if (size < EXCERPT_BYTES) chunks.push(c);
          size += c.length;
          // Enough for the ledger: stop reading; this socket is not reused.
          if (size > EXCERPT_BYTES) {
            r.destroy();
            finish(fromResponse(r));
          }
        });
        r.on('end', () => finish(fromResponse(r)));
        r.on('error', fail);
        r.on('close', () => finish(fromResponse(r)));
      });
      req.end(body);
    });
  }

  /** Closes every pooled connection. Idempotent. */
  close(): void {
    for (const a of this.agents.values()) a.destroy();
    this.agents.clear();
  }
}
