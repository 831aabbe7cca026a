import http from 'node:http';

/**
 * A browser-like HTTP client for the console, over real HTTP (node:http, so the client address
 * can be chosen with `from`): it keeps the session cookie it is given, never follows
 * redirects, and sends forms as application/x-www-form-urlencoded.
 */

export interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  /** The Location of a redirect, as sent. */
  location: string | undefined;
  setCookie: string[];
}

export function consoleClient(baseUrl: string, o: { from?: string } = {}) {
  const base = new URL(baseUrl);
  let cookie: string | undefined;

  function send(
    method: string,
    path: string,
    opts: {
      form?: Record<string, string | string[]>;
      headers?: Record<string, string>;
      cookie?: string | null;
    } = {},
  ): Promise<Answer> {
    const body = opts.form
      ? new URLSearchParams(
          Object.entries(opts.form).flatMap(([k, v]) =>
            (Array.isArray(v) ? v : [v]).map((x) => [k, x] as [string, string]),
          ),
        ).toString()
      : undefined;
    const jar = opts.cookie === null ? undefined : (opts.cookie ?? cookie);
    const headers: Record<string, string> = {
      accept: 'text/html',
      ...(body !== undefined ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
      ...(jar ? { cookie: `__Host-svc_console=${jar}` } : {}),
      ...opts.headers,
    };
    return new Promise((resolve, reject) => {
      const req = http.request(
        {
          host: base.hostname,
          port: base.port,
          method,
          path,
          headers,
          ...(o.from ? { localAddress: o.from } : {}),
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const setCookie = res.headers['set-cookie'] ?? [];
            for (const c of setCookie) {
              const m = /^__Host-svc_console=([^;]*)/.exec(c);
              if (m) cookie = m[1] === '' ? undefined : m[1];
            }
            resolve({
              status: res.statusCode ?? 0,
              headers: res.headers,
              text: Buffer.concat(chunks).toString('utf8'),
              location: res.headers.location,
              setCookie,
            });
          });
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  }

  return {
    send,
    get: (path: string, opts: Parameters<typeof send>[2] = {}) => send('GET', path, opts),
    post: (
      path: string,
      form: Record<string, string | string[]>,
      opts: Parameters<typeof send>[2] = {},
    ) => send('POST', path, { ...opts, form }),
    /** The session id the client holds (the cookie's value). */
    get session(): string | undefined {
      return cookie;
    },
    forget() {
      cookie = undefined;
    },
  };
}

export type ConsoleClient = ReturnType<typeof consoleClient>;

/** The CSRF token a page's forms carry. */
export function csrfOf(html: string): string {
  const m = /name="_csrf" value="([^"]+)"/.exec(html);
  if (!m?.[1]) throw new Error('no CSRF field on the page');
  return m[1];
}
