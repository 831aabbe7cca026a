import type { Express } from 'express';
import type { Runtime } from './runtime.js';

/**
 * What a service or a worker is to the host that runs it (bin/host.ts): declared here, in the
 * core, so that services/* and workers/* implement it without importing bin/ (only their
 * `main.ts` entries do; test/infra/floors.test.ts checks).
 */

/** An HTTP service: mounts its routes on the shared app. */
export interface ServiceModule {
  name: string;
  mount(app: Express, rt: Runtime): void | Promise<void>;
}

/** A worker: starts consuming or sweeping; `stop` drains. */
export interface WorkerModule {
  name: string;
  start(rt: Runtime): Promise<{ stop(): Promise<void> }>;
}
