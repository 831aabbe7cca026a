import http from 'node:http';
import type { FuzzRequest } from './request.js';

/**
 * Sends a fuzz request with node:http (fetch would normalise what the fuzzer breaks on
 * purpose: duplicated headers, odd content types, bodies on GET) and reads the whole answer.
 */

export interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  text: string;
  ms: number;
}

export interface NoAnswer {
  error: string;
  ms: number;
}

export function createAgent(concurrency: number): http.Agent {
  return new http.Agent({ keepAlive: true, maxSockets: concurrency });
}

export function send(
  base: URL,
  req: FuzzRequest,
  agent: http.Agent,
  timeoutMs: number,
): Promise<Answer | NoAnswer> {
  const started = Date.now();
  return new Promise((resolve) => {
    let done = false;
    const finish = (r: Answer | NoAnswer) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(r);
    };
    const timer = setTimeout(() => {
      finish({ error: `no answer within ${timeoutMs} ms`, ms: Date.now() - started });
      r.destroy();
    }, timeoutMs);
    const r = http.request(
      {
        host: base.hostname,
        port: base.port,
        method: req.method,
        path: req.url,
        agent,
        headers: {
          ...req.headers,
          ...(req.body ? { 'content-length': String(req.body.length) } : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', (err) =>
          finish({ error: `response: ${err.message}`, ms: Date.now() - started }),
        );
        res.on('end', () => {
          const body = Buffer.concat(chunks);
          finish({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body,
            text: body.toString('utf8'),
            ms: Date.now() - started,
          });
        });
      },
    );
    r.on('error', (err: NodeJS.ErrnoException) =>
      finish({ error: `${err.code ?? ''} ${err.message}`.trim(), ms: Date.now() - started }),
    );
    if (req.body) r.end(req.body);
    else r.end();
  });
}

export const answered = (a: Answer | NoAnswer): a is Answer => 'status' in a;
