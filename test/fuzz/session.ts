import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { routesOf, type Route } from './routes.js';
import { World } from './world.js';

/** What a fuzz run needs besides the service: settings, a webhook receiver, the world. */

/**
 * Settings, and fixed values (split off by test/helpers/tuning.ts), for the service under fuzz.
 * The failed-authentication and capture limits are raised so that wrong credentials reach the
 * lookups they are meant to exercise (at the defaults nearly every one would get a 429 first);
 * the deadlines are the feature tests' (test/helpers/stack.ts), since this machine is shared
 * and a 503 there is a finding.
 */
export function fuzzEnv(adminToken: string): Record<string, string> {
  return {
    SVC_ADMIN_TOKEN: adminToken,
    RATE_LIMIT_AUTH_FAILURE_RPS: '100000',
    RATE_LIMIT_AUTH_FAILURE_BURST: '100000',
    RATE_LIMIT_CAPTURE_PER_IP_RPS: '100000',
    RATE_LIMIT_CAPTURE_PER_IP_BURST: '100000',
    HTTP_DEADLINE_MS: '20000',
    DYNAMODB_REQUEST_TIMEOUT_MS: '10000',
    WEBHOOK_ALLOW_LOOPBACK_SANDBOX: 'true',
    OUTBOX_RELAY_INTERVAL_MS: '200',
    OUTBOX_WRITER_STALE_MS: '3000',
  };
}

export const newAdminToken = () => `fuzz-admin-${randomBytes(16).toString('hex')}`;

/** A webhook endpoint that accepts everything, so deliveries succeed and nothing is retried. */
export async function startReceiver(): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(204).end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * Reads the routes from the service's own /openapi.json and creates the two tenants with
 * their data; waits up to `dispatchWaitMs` for the dispatcher to record their dispatches.
 */
export async function prepare(o: {
  baseUrl: string;
  adminToken: string;
  receiverUrl: string;
  dispatchWaitMs: number;
  log: (m: string) => void;
}): Promise<{ world: World; routes: Route[] }> {
  const doc = (await (await fetch(`${o.baseUrl}/openapi.json`)).json()) as Parameters<
    typeof routesOf
  >[0];
  const routes = routesOf(doc);
  if (routes.length === 0) throw new Error('fuzz: /openapi.json lists no routes');
  const world = new World(o.baseUrl, o.adminToken, o.receiverUrl, o.log);
  await Promise.all([world.addTenant('A'), world.addTenant('B')]);
  // Same order whatever finished first, so a seed draws the same tenant as X.
  world.apps.sort((a, b) => a.label.localeCompare(b.label));
  await world.waitForDispatches(o.dispatchWaitMs);
  const count = (f: (t: (typeof world.tenants)[number]) => number) =>
    world.tenants.map(f).join('/');
  o.log(
    `${routes.length} routes; tenants A/B with ${count((t) => t.principals.length)} principals, ${count((t) => t.dispatches.length)} dispatches, ${count((t) => t.keys.length)} API keys`,
  );
  return { world, routes };
}
