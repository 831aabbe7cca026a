import express, { type Express, type RequestHandler } from 'express';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { Logger } from '../logger.js';
import { getOrCreate } from '../metrics.js';
import { safeEqual } from '../domain/crypto.js';
import { AppError, errorCodes } from '../errors.js';
import { notFoundHandler, problemHandler, problemJson, sendProblem } from './problem.js';
import { LagLimit } from './lag-limit.js';
import { keepRawBody } from './raw-body.js';
import { traceRequests } from '../telemetry.js';

export type ReadinessCheck = () => Promise<void>;

export interface HttpAppOptions {
  log: Logger;
  registry: Registry;
  bodyLimitBytes: number;
  /** Each must resolve when its dependency is reachable (DynamoDB, Kafka). */
  readiness: Record<string, ReadinessCheck>;
  /** Express `trust proxy` (TRUST_PROXY): whose X-Forwarded-* to believe; default loopback. */
  trustProxy?: boolean | number | string;
  /**
   * Dependencies whose loss degrades the service without making it unready: with Kafka down,
   * changes still land in DynamoDB with their outbox items and are published later.
   */
  degradable?: string[];
  /** Each readiness check counts as failed when it has not answered within this. */
  readinessTimeoutMs?: number;
  /**
   * False while the process still starts its workers: /readyz then answers 503 `starting`
   * (the checks still run), so ready means the process does all its role does.
   */
  started?: () => boolean;
  /** API requests unanswered after this get 503 SVC_UNAVAILABLE (see `deadline`). */
  deadlineMs?: number;
  /** API requests beyond this many in progress get 503 at once (see `Admission`). */
  maxInFlight?: number;
  /** Event-loop lag (ms) over which admission takes fewer requests (see `LagLimit`); 0: off. */
  lagShedMs?: number;
  /** When set, /metrics requires `Authorization: Bearer <token>`. */
  metricsToken?: string | undefined;
  /** The origin clients reach (PUBLIC_BASE_URL); when https, every answer carries HSTS. */
  publicBaseUrl?: string;
}

/** A year, with subdomains: a browser that once reached the service over https keeps to it. */
export const HSTS = 'max-age=31536000; includeSubDomains';

/** Paths that stream for as long as they need and so are not held to the deadline. */
const undeadlined = new Set(['/api/v1/ledger/export']);

/**
 * Answers 503 SVC_UNAVAILABLE with Retry-After when a request is still unanswered after `ms`
 * (a stalled store or broker), so no caller hangs. A handler that answers later finds the
 * response sent; its late answer is dropped (see `problemHandler`). A consent change it had not
 * yet sent to the store is then not made (`abandonedBy`); one already sent may still land, but
 * it was never acknowledged, which is what callers rely on.
 */
export function deadline(ms: number): RequestHandler {
  return (req, res, next) => {
    if (undeadlined.has(req.path)) return next();
    const timer = setTimeout(() => {
      if (res.headersSent) return;
      res.locals.deadlineExpired = true;
      sendProblem(
        res,
        new AppError(
          'SVC_UNAVAILABLE',
          'The request could not be completed in time: a backing service is slow or unavailable',
          { retryAfterS: 2 },
        ),
        req.originalUrl,
      );
    }, ms);
    const clear = () => clearTimeout(timer);
    res.once('finish', clear);
    res.once('close', clear);
    next();
  };
}

/**
 * Admission control: with `max` API requests already in progress in this process, another
 * is answered 503 SVC_UNAVAILABLE with `Retry-After: 1` at once, before anything is read or
 * written. Past the sustained rate, requests would otherwise queue until the deadline answers
 * them 503 while their changes may still land; a request refused here changed nothing.
 *
 * The refusal is made in the server's request listener (`listen`), before Express: no route
 * matching, no trace span, no body read, one answer prepared in advance but for its `instance`.
 * In a burst most requests are refused, and each refusal then costs the process about a quarter
 * of what it cost through Express (80–100 against 320–390 µs of CPU, `npm run bench -- refusal`
 * on the machine of docs/benchmarks.md), CPU that goes to the requests it admitted instead. A
 * refused request is still counted in `svc_http_requests_total` (route `unmatched`, as unrouted
 * requests are) and in `svc_http_shed_total`.
 *
 * The limit also follows the event loop's lag (`lagShedMs`, HTTP_LAG_SHED_MS; `LagLimit`):
 * requests wait unread in the listen backlog while the loop is busy, which the in-flight count
 * cannot see, so while the loop lags the limit falls, down to 4, and more are refused at once
 * (`svc_http_admission_limit`; refusals below `max` also count in
 * `svc_http_shed_lagging_total`).
 *
 * An admitted request reaches Express one turn of the event loop later, once the loop has
 * polled its connection again: a caller that hung up while its request waited unread (a burst
 * leaves thousands in the listen backlog for longer than callers wait) has by then been seen to
 * leave, and its request is dropped before any work or write is done for it
 * (`svc_http_callers_gone_total`). Without the turn, the connection's end is read only after the
 * handler has begun, often after its change was already sent to the store.
 *
 * A request counts until its handler is done, not until its answer left: one the deadline
 * answered goes on working, and counts until its late answer is dropped (`problemHandler`
 * calls `res.locals.admissionDone`), or 10 deadlines at most. Otherwise work cut loose by the
 * deadline would pile up behind the limit and the process would collapse under overload.
 */
export class Admission {
  private inFlight = 0;
  private readonly shed: Counter | undefined;
  private readonly shedLagging: Counter | undefined;
  private readonly gone: Counter | undefined;
  private readonly http: ReturnType<typeof httpMetricSet> | undefined;
  private readonly head: string;
  private readonly lag: LagLimit;
  private readonly limitGauge: Gauge | undefined;

  constructor(
    private readonly max: number,
    registry?: Registry,
    private readonly deadlineMs = 1_800,
    private readonly lagShedMs = 0,
  ) {
    this.lag = new LagLimit({ max, shedMs: lagShedMs });
    this.limitGauge = registry
      ? getOrCreate(
          registry,
          'svc_http_admission_limit',
          () =>
            new Gauge({
              name: 'svc_http_admission_limit',
              help: 'API requests admission control lets in at once now: HTTP_MAX_IN_FLIGHT, lower while the event loop lags (HTTP_LAG_SHED_MS)',
              registers: [registry],
            }),
        )
      : undefined;
    this.limitGauge?.set(max);
    this.shed = counterIn(
      registry,
      'svc_http_shed_total',
      'API requests refused at once because too many were in progress (HTTP_MAX_IN_FLIGHT)',
    );
    this.shedLagging = counterIn(
      registry,
      'svc_http_shed_lagging_total',
      'API requests refused at once with fewer than HTTP_MAX_IN_FLIGHT in progress, the limit being lowered while the event loop lagged (HTTP_LAG_SHED_MS); counted in svc_http_shed_total too',
    );
    this.gone = counterIn(
      registry,
      'svc_http_callers_gone_total',
      'API requests admitted but dropped before any work, their caller having hung up while they waited unread',
    );
    this.http = registry ? httpMetricSet(registry) : undefined;
    // The problem+json `sendProblem` writes, but for its `instance`, which ends it.
    this.head = problemJson(
      new AppError('SVC_UNAVAILABLE', 'The service is at capacity; retry shortly'),
    ).slice(0, -1);
  }

  /**
   * Admits an API request (counted until its handler is done) and calls `run` a turn of the
   * event loop later, unless its caller has hung up by then; or answers it 503 here. Requests
   * outside /api, and those that stream for as long as they need, run at once, uncounted.
   */
  admit(req: IncomingMessage, res: ServerResponse, run: () => void): void {
    const path = apiPath(req.url ?? '');
    if (path === undefined || undeadlined.has(path)) return run();
    if (this.inFlight >= this.lag.limit) {
      const start = process.hrtime.bigint();
      this.shed?.inc();
      if (this.inFlight < this.max) this.shedLagging?.inc();
      const body = `${this.head},"instance":${JSON.stringify(req.url ?? '')}}`;
      res.writeHead(503, {
        'Content-Type': 'application/problem+json; charset=utf-8',
        'Content-Length': Buffer.byteLength(body),
        'Retry-After': '1',
      });
      res.end(body);
      this.http?.requests.inc({ method: req.method ?? '', route: 'unmatched', status: '503' });
      this.http?.duration.observe(
        { method: req.method ?? '', route: 'unmatched' },
        Number(process.hrtime.bigint() - start) / 1e9,
      );
      return;
    }
    this.inFlight++;
    let done = false;
    let cap: NodeJS.Timeout | undefined;
    const release = () => {
      if (done) return;
      done = true;
      this.inFlight--;
      if (cap) clearTimeout(cap);
    };
    // Express keeps `res.locals` when it is there already.
    const locals = ((res as ServerResponse & { locals?: Record<string, unknown> }).locals ??=
      Object.create(null) as Record<string, unknown>);
    locals.admissionDone = release;
    const answered = () => {
      if (locals.deadlineExpired !== true) return release();
      // Answered by the deadline: the handler is still at work.
      cap ??= setTimeout(release, 10 * this.deadlineMs).unref();
    };
    res.once('finish', answered);
    res.once('close', answered);
    // The first turn's check phase comes before the loop polls again; the second's after it.
    setImmediate(() =>
      setImmediate(() => {
        if (!hungUp(req)) return run();
        this.gone?.inc();
        release();
      }),
    );
  }

  /**
   * Feeds the event loop's lag to the limit, a window of `windowMs` at a time (the longest delay
   * of the window, sampled every 10 ms), while the server listens. Returns the stop.
   */
  watchLag(windowMs = 250): () => void {
    if (!this.lagShedMs) return () => undefined;
    const h = monitorEventLoopDelay({ resolution: 10 });
    h.enable();
    const timer = setInterval(() => {
      const limit = this.lag.observe(h.max / 1e6);
      h.reset();
      this.limitGauge?.set(limit);
    }, windowMs).unref();
    return () => {
      clearInterval(timer);
      h.disable();
    };
  }
}

/** A counter of `registry` (one per name, shared by every user of it), or none without one. */
function counterIn(
  registry: Registry | undefined,
  name: string,
  help: string,
): Counter | undefined {
  return registry
    ? getOrCreate(registry, name, () => new Counter({ name, help, registers: [registry] }))
    : undefined;
}

/** The caller closed its connection (or it broke) before its answer: nobody will read one. */
function hungUp(req: IncomingMessage): boolean {
  return req.socket.destroyed || req.socket.readableEnded;
}

/**
 * The path of a request under /api (Express matches `app.use('/api')` without regard to case),
 * or undefined for any other: from the request target as sent, origin-form or absolute-form.
 */
function apiPath(url: string): string | undefined {
  let path = url;
  if (!url.startsWith('/')) {
    try {
      path = new URL(url).pathname;
    } catch {
      return undefined;
    }
  }
  const q = path.indexOf('?');
  if (q >= 0) path = path.slice(0, q);
  return /^\/api(?:\/|$)/i.test(path) ? path : undefined;
}

/** Each app's admission control (`createHttpApp`), applied by `listen` before Express. */
const admissions = new WeakMap<Express, Admission>();

/** Runs one readiness check, failing it when it takes longer than `ms`. */
async function within(check: ReadinessCheck, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      check().then(() => true),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms))),
    ]);
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

function httpMetricSet(registry: Registry) {
  const requests = getOrCreate(
    registry,
    'svc_http_requests_total',
    () =>
      new Counter({
        name: 'svc_http_requests_total',
        help: 'HTTP requests by route and status',
        labelNames: ['method', 'route', 'status'],
        registers: [registry],
      }),
  );
  const duration = getOrCreate(
    registry,
    'svc_http_request_duration_seconds',
    () =>
      new Histogram({
        name: 'svc_http_request_duration_seconds',
        help: 'HTTP request duration by route',
        labelNames: ['method', 'route'],
        buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
        registers: [registry],
      }),
  );
  return { requests, duration };
}

function httpMetrics(registry: Registry): RequestHandler {
  const { requests, duration } = httpMetricSet(registry);
  return (req, res, next) => {
    const start = process.hrtime.bigint();
    res.on('finish', () => {
      // The matched route pattern keeps labels bounded; unmatched paths share one label.
      const path = (req.route as { path?: string } | undefined)?.path;
      const route = path ? `${req.baseUrl}${path}` : 'unmatched';
      const secs = Number(process.hrtime.bigint() - start) / 1e9;
      requests.inc({ method: req.method, route, status: String(res.statusCode) });
      duration.observe({ method: req.method, route }, secs);
    });
    next();
  };
}

/**
 * An Express app with the cross-cutting parts every service shares: JSON body limit,
 * HTTP metrics, /healthz, /readyz, /metrics. Call `finish(app)` after mounting routes.
 */
export function createHttpApp(o: HttpAppOptions): Express {
  const app = express();
  admissions.set(
    app,
    new Admission(o.maxInFlight ?? 64, o.registry, o.deadlineMs ?? 1_800, o.lagShedMs ?? 0),
  );
  app.disable('x-powered-by');
  app.set('trust proxy', o.trustProxy ?? 'loopback');
  if (o.publicBaseUrl !== undefined && new URL(o.publicBaseUrl).protocol === 'https:')
    app.use((_req, res, next) => {
      res.setHeader('Strict-Transport-Security', HSTS);
      next();
    });
  app.use(traceRequests());
  app.use(httpMetrics(o.registry));
  app.use('/api', deadline(o.deadlineMs ?? 1_800));
  app.use(
    express.json({
      limit: o.bodyLimitBytes,
      type: ['application/json', 'application/*+json'],
      verify: keepRawBody,
    }),
  );
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  // Names what is down, never how (error text may carry addresses or internals).
  app.get('/readyz', async (_req, res) => {
    const results = await Promise.all(
      Object.entries(o.readiness).map(
        async ([name, check]) =>
          [
            name,
            (await within(check, o.readinessTimeoutMs ?? 1_000)) ? 'ok' : 'unavailable',
          ] as const,
      ),
    );
    const down = results.filter(([, s]) => s !== 'ok').map(([name]) => name);
    const fatal = down.filter((name) => !(o.degradable ?? []).includes(name));
    const starting = !(o.started?.() ?? true);
    const status = starting
      ? 'starting'
      : fatal.length > 0
        ? 'not ready'
        : down.length > 0
          ? 'degraded'
          : 'ready';
    res.status(starting || fatal.length > 0 ? 503 : 200).json({
      status,
      checks: Object.fromEntries(results),
      ...(down.length > 0 ? { unavailable: down } : {}),
    });
  });
  app.get('/metrics', async (req, res) => {
    if (o.metricsToken !== undefined) {
      const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(req.get('authorization') ?? '');
      if (!m?.[1] || !safeEqual(m[1], o.metricsToken)) {
        res.setHeader('WWW-Authenticate', 'Bearer');
        sendProblem(res, new AppError('SVC_UNAUTHORIZED', 'A valid metrics token is required'));
        return;
      }
    }
    res.type(o.registry.contentType).send(await o.registry.metrics());
  });
  return app;
}

/** Adds the 404 and problem+json handlers; call after every route is mounted. */
export function finishHttpApp(app: Express, log: Logger): Express {
  app.use(notFoundHandler);
  app.use(problemHandler(log));
  return app;
}

/**
 * Requests Node's HTTP parser refuses before Express sees them (headers over 16 KB, malformed
 * request lines) still get a problem+json answer, then the connection closes.
 */
function answerClientErrors(srv: Server): void {
  srv.on('clientError', (err: NodeJS.ErrnoException & { rawPacket?: Buffer }, socket: Duplex) => {
    if (!socket.writable) return socket.destroy();
    const big = err.code === 'HPE_HEADER_OVERFLOW';
    const e = big
      ? new AppError('SVC_HEADERS_TOO_LARGE', 'The request line and headers may not exceed 16 KB')
      : new AppError('SVC_BAD_JSON', 'The request could not be parsed as HTTP');
    const body = problemJson(e);
    // An answer to HEAD carries no body (a client would take it for the next response).
    const head = err.rawPacket?.toString('latin1', 0, 5) === 'HEAD ';
    socket.end(
      `HTTP/1.1 ${e.status} ${errorCodes[e.code].title}\r\nContent-Type: application/problem+json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${head ? '' : body}`,
    );
  });
}

const served = new WeakMap<Server, Express>();
/** The Express app a server made by `listen` serves (its request listener admits, then calls it). */
export const appServedBy = (srv: Server): Express | undefined => served.get(srv);

export function listen(app: Express, port: number, host: string, backlog = 4_096): Promise<Server> {
  return new Promise((resolve, reject) => {
    // Admission control answers before Express when the process is at capacity (`Admission`).
    const admission = admissions.get(app);
    const srv = createServer(
      admission ? (req, res) => admission.admit(req, res, () => void app(req, res)) : app,
    );
    served.set(srv, app);
    if (admission) srv.once('close', admission.watchLag());
    srv.listen({ port, host, backlog });
    answerClientErrors(srv);
    srv.once('listening', () => resolve(srv));
    srv.once('error', reject);
  });
}

export function closeServer(srv: Server): Promise<void> {
  return new Promise((resolve) => {
    srv.close(() => resolve());
    srv.closeIdleConnections();
  });
}
