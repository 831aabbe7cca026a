import { Registry, collectDefaultMetrics } from 'prom-client';

/** One registry per process; modules create their metrics on the registry they are given. */
export function createRegistry(
  opts: { defaultMetrics?: boolean; labels?: Record<string, string> } = {},
) {
  const registry = new Registry();
  if (opts.labels) registry.setDefaultLabels(opts.labels);
  if (opts.defaultMetrics !== false)
    collectDefaultMetrics({ register: registry, prefix: 'svc_process_' });
  return registry;
}

/** Returns the metric already on the registry under `name`, or makes it. Lets several modules share one. */
export function getOrCreate<T>(registry: Registry, name: string, make: () => T): T {
  return (registry.getSingleMetric(name) as T | undefined) ?? make();
}

/**
 * Histogram buckets (seconds) for the steps of a request inside the service (a store request, a
 * publish): fine below 50 ms, where a store or a broker on the same network answers.
 */
export const STEP_SECONDS_BUCKETS = [
  0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.25, 0.5, 1, 2.5,
  5,
];
