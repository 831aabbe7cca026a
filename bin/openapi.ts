import express from 'express';
import { loadConfig } from '../shared/config.js';
import { createLogger } from '../shared/logger.js';
import { createRuntime } from './compose.js';
import { allServices } from './modules.js';

/**
 * The OpenAPI document of every service of `npm start`, as GET /openapi.json serves it (without
 * `servers`), built without a stack: mounting routes registers their docs and does no I/O.
 * `npm run openapi` prints it; the SDK's types are generated from it (clients/typescript).
 */
export async function openApiDocument(): Promise<Record<string, unknown>> {
  const config = loadConfig({ KAFKA_BROKERS: '127.0.0.1:9', LOG_LEVEL: 'silent' });
  const rt = createRuntime(config, createLogger({ level: 'silent' }));
  try {
    const app = express();
    for (const s of allServices) await s.mount(app, rt);
    return rt.docs.document();
  } finally {
    await rt.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  process.stdout.write(`${JSON.stringify(await openApiDocument(), null, 2)}\n`);
}
