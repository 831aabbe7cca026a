import express, { type Express, type RequestHandler } from 'express';
import { createServer, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { Counter, Histogram, type Registry } from 'prom-client';
import type { Logger } from '../logger.js';
import { getOrCreate } from '../metrics.js';
import { safeEqual } from '../domain/crypto.js';
import { AppError, errorCodes } from '../errors.js';
import { notFoundHandler, problemHandler, sendProblem } from './problem.js';
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
  /** API requests unanswered after this get 503 SVC_UNAVAILABLE (see `deadline`). */
  deadlineMs?: number;
  /** API requests beyond this many in progress get 503 at once (see `admission`). */
  maxInFlight?: number;
  /** When set, /metrics requires `Authorization: Bearer <token>`. */
  metricsToken?: string | undefined;
}

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
 * A request counts until its handler is done, not until its answer left: one the deadline
 * answered goes on working, and counts until its late answer is dropped (`problemHandler`
 * calls `res.locals.admissionDone`), or 10 deadlines at most. Otherwise work cut loose by the
 * deadline would pile up behind the limit and the process would collapse under overload.
 */
export function admission(max: number, registry?: Registry, deadlineMs = 1_800): RequestHandler {
  let inFlight = 0;
  const shed = registry
    ? getOrCreate(
        registry,
        'svc_http_shed_total',
        () =>
          new Counter({
            name: 'svc_http_shed_total',
            help: 'API requests refused at once because too many were in progress (HTTP_MAX_IN_FLIGHT)',
            registers: [registry],
          }),
      )
    : undefined;
  return (req, res, next) => {
    if (undeadlined.has(req.path)) return next();
    if (inFlight >= max) {
      shed?.inc();
      return sendProblem(
        res,
        new AppError('SVC_UNAVAILABLE', 'The service is at capacity; retry shortly', {
          retryAfterS: 1,
        }),
        req.originalUrl,
      );
    }
    inFlight++;
    let done = false;
    let cap: NodeJS.Timeout | undefined;
    const release = () => {
      if (done) return;
      done = true;
      inFlight--;
      if (cap) clearTimeout(cap);
    };
    res.locals.admissionDone = release;
    const answered = () => {
      if (res.locals.deadlineExpired !== true) return release();
      // Answered by the deadline: the handler is still at work.
      cap ??= setTimeout(release, 10 * deadlineMs).unref();
    };
    res.once('finish', answered);
    res.once('close', answered);
    next();
  };
}

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

function httpMetrics(registry: Registry): RequestHandler {
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
  app.disable('x-powered-by');
  app.set('trust proxy', o.trustProxy ?? 'loopback');
  app.use(traceRequests());
  app.use(httpMetrics(o.registry));
  app.use('/api', admission(o.maxInFlight ?? 64, o.registry, o.deadlineMs ?? 1_800));
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
    const status = fatal.length > 0 ? 'not ready' : down.length > 0 ? 'degraded' : 'ready';
    res.status(fatal.length > 0 ? 503 : 200).json({
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
    const body = JSON.stringify({
      type: `https://docs.svc.dev/errors/${e.code.toLowerCase()}`,
      title: errorCodes[e.code].title,
      status: e.status,
      detail: e.message,
      code: e.code,
    });
    // An answer to HEAD carries no body (a client would take it for the next response).
    const head = err.rawPacket?.toString('latin1', 0, 5) === 'HEAD ';
    socket.end(
      `HTTP/1.1 ${e.status} ${errorCodes[e.code].title}\r\nContent-Type: application/problem+json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${head ? '' : body}`,
    );
  });
}

export function listen(app: Express, port: number, host: string, backlog = 4_096): Promise<Server> {
  return new Promise((resolve, reject) => {
    const srv = createServer(app);
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
