import { ConfigError, loadConfig } from '../shared/config.js';
import { createLogger } from '../shared/logger.js';
import { resolveInfra } from './process.js';
import { createDynamo } from '../shared/storage/dynamo.js';
import { StackError } from '../infra/local/errors.js';
import { migrate, SchemaError, SCHEMA_VERSION } from '../infra/definitions/schema.js';
import { applyTablesOnly } from '../infra/definitions/apply.js';

/**
 * `npm run migrate`: brings the stored data to this build's schema version (infra/definitions/
 * schema.ts): completes existing tables, then runs each pending migration in order. Safe to run
 * again; a process refuses to start until it has run.
 */
async function run(): Promise<number> {
  const base = loadConfig();
  const log = createLogger({ level: 'warn', name: 'migrate', toStderr: true });
  const { config, stack } = await resolveInfra(base, log);
  const dynamo = createDynamo(config);
  const say = (m: string) => process.stdout.write(`${m}\n`);
  try {
    await applyTablesOnly(dynamo.client, config.TABLE_PREFIX, say);
    const { from, to } = await migrate(dynamo.client, config.TABLE_PREFIX, say);
    say(
      from === to
        ? `schema version ${to}: nothing to migrate (this build's is ${SCHEMA_VERSION})`
        : `migrated from schema version ${from} to ${to}`,
    );
    return 0;
  } finally {
    dynamo.close();
    await stack?.stop();
  }
}

run().then(
  (code) => process.exit(code),
  (err: unknown) => {
    const known =
      err instanceof ConfigError || err instanceof StackError || err instanceof SchemaError;
    process.stderr.write(`error: ${known ? (err as Error).message : String(err)}\n`);
    process.exit(1);
  },
);
