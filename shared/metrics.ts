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
