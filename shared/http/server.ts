import express, { type Express, type RequestHandler } from 'express';
import type { Server } from 'node:http';
import { Counter, Histogram, type Registry } from 'prom-client';
import type { Logger } from '../logger.js';
import { getOrCreate } from '../metrics.js';
import { notFoundHandler, problemHandler } from './problem.js';
import { traceRequests } from '../telemetry.js';

export type ReadinessCheck = () => Promise<void>;

export interface HttpAppOptions {
  log: Logger;
  registry: Registry;
  bodyLimitBytes: number;
  /** Each must resolve when its dependency is reachable (DynamoDB, Kafka). */
  readiness: Record<string, ReadinessCheck>;
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
      const route = req.route?.path ? `${req.baseUrl}${String(req.route.path)}` : 'unmatched';
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
  app.set('trust proxy', 'loopback');
  app.use(traceRequests());
  app.use(httpMetrics(o.registry));
  app.use(
    express.json({ limit: o.bodyLimitBytes, type: ['application/json', 'application/*+json'] }),
  );
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/readyz', async (_req, res) => {
    const results = await Promise.all(
      Object.entries(o.readiness).map(async ([name, check]) => {
        try {
          await check();
          return [name, 'ok'] as const;
        } catch (err) {
          return [name, `unavailable: ${(err as Error).message}`] as const;
        }
      }),
    );
    const ok = results.every(([, s]) => s === 'ok');
    res
      .status(ok ? 200 : 503)
      .json({ status: ok ? 'ready' : 'not ready', checks: Object.fromEntries(results) });
  });
  app.get('/metrics', async (_req, res) => {
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

export function listen(app: Express, port: number, host: string): Promise<Server> {
  return new Promise((resolve, reject) => {
    const srv = app.listen(port, host);
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
