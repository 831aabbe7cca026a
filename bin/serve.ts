import { ConfigError, loadConfig, type BaseConfig } from '../shared/config.js';
import { main, requireExternalInfra } from './host.js';
import { role, roleModules } from './roles.js';

/**
 * The production entry: `npm run start:prod`, i.e. `node dist/bin/serve.js` after
 * `npm run build`. The same roles (bin/roles.ts) and settings as `npm start`, on the Kafka
 * and DynamoDB it is given only: it neither starts nor imports the embedded stack
 * (test/infra/prod-entry.test.ts walks its imports), and without KAFKA_BROKERS and
 * AWS_REGION (or DYNAMODB_ENDPOINT) it stops at once with one line.
 */
const r = role('npm run start:prod');

function settings(): BaseConfig {
  try {
    const config = loadConfig();
    requireExternalInfra(config);
    return config;
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`error: ${err.message}\n`);
    process.exit(1);
  }
}

await main({ ...roleModules(r), config: settings() });
