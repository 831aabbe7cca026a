import { parseArgs } from 'node:util';
import type { ProcessOptions } from './host.js';
import { allServices, allWorkers, relayWorker } from './modules.js';

/**
 * `--role` splits the one process for several copies sharing one Kafka and one DynamoDB:
 * `ingress` serves the HTTP APIs (and relays its outbox), `workers` runs the consumers and
 * timers (with /healthz, /readyz and /metrics on PORT), `all` is both. Read by `npm start`
 * (`bin/start.ts`) and `npm run start:prod` (`bin/serve.ts`) alike.
 */
export const roles = ['all', 'ingress', 'workers'] as const;
export type Role = (typeof roles)[number];

/** The role asked for on the command line (or SVC_ROLE); a bad one exits 2 with usage. */
export function role(command: string): Role {
  try {
    const { values } = parseArgs({
      args: process.argv.slice(2),
      options: { role: { type: 'string', default: process.env.SVC_ROLE ?? 'all' } },
      strict: true,
    });
    const r = values.role as Role;
    if (roles.includes(r)) return r;
    throw new Error(`unknown role "${r}"`);
  } catch (err) {
    process.stderr.write(
      `error: ${(err as Error).message}; usage: ${command} -- [--role=${roles.join('|')}]\n`,
    );
    process.exit(2);
  }
}

/** The process name, services and workers of a role. */
export function roleModules(r: Role): Pick<ProcessOptions, 'name' | 'services' | 'workers'> {
  return {
    name: r === 'all' ? 'svc-consent' : `svc-consent-${r}`,
    services: r === 'workers' ? [] : allServices,
    workers: r === 'ingress' ? [relayWorker] : allWorkers,
  };
}
