import { ConfigError, loadConfig } from '../shared/config.js';
import { resealSecrets } from '../shared/domain/apps.js';
import { currentKey, keyring } from '../shared/domain/crypto.js';
import { createLogger } from '../shared/logger.js';
import { resolveInfra } from './process.js';
import { createRuntime } from './compose.js';
import { StackError } from '../infra/local/errors.js';

/**
 * `npm run rekey`: reseals every stored secret under the current encryption key (the first of
 * SVC_ENCRYPTION_KEYS), step 2 of a key rotation (docs/security.md). Safe to run again, and
 * while the service runs.
 */
async function run(): Promise<number> {
  const base = loadConfig();
  const ring = keyring(base);
  const log = createLogger({ level: 'warn', name: 'rekey', toStderr: true });
  const { config, stack } = await resolveInfra(base, log);
  const rt = createRuntime(config, log);
  try {
    const { checked, resealed, left } = await resealSecrets(rt);
    process.stdout.write(
      `${checked} secrets checked, ${resealed} resealed under ${currentKey(config).kid}` +
        `${left ? `, ${left} changed meanwhile (run again)` : ''}; keys: ${[...ring.keys.keys()].join(', ')}\n`,
    );
    return left ? 1 : 0;
  } finally {
    await rt.close();
    await stack?.stop();
  }
}

run().then(
  (code) => process.exit(code),
  (err: unknown) => {
    const known = err instanceof ConfigError || err instanceof StackError;
    process.stderr.write(`error: ${known ? (err as Error).message : String(err)}\n`);
    process.exit(1);
  },
);
