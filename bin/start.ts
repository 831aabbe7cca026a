import { parseArgs } from 'node:util';
import { main } from '../shared/process.js';
import { allServices, allWorkers, relayWorker } from './modules.js';

/**
 * `npm start` runs everything in one process. `--role` splits it for several copies sharing one
 * Kafka and one DynamoDB: `ingress` serves the HTTP APIs (and relays its outbox), `workers`
 * runs the consumers and timers (with /healthz, /readyz and /metrics on PORT), `all` is both.
 */
const roles = ['all', 'ingress', 'workers'] as const;
type Role = (typeof roles)[number];

function role(): Role {
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
      `error: ${(err as Error).message}; usage: npm start -- [--role=${roles.join('|')}]\n`,
    );
    process.exit(2);
  }
}

const r = role();
await main({
  name: r === 'all' ? 'svc-consent' : `svc-consent-${r}`,
  services: r === 'workers' ? [] : allServices,
  workers: r === 'ingress' ? [relayWorker] : allWorkers,
});
