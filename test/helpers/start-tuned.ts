import { role, roleModules } from '../../bin/roles.js';
import { loadConfig } from '../../shared/config.js';
import { main } from '../../bin/process.js';
import type { Tuning } from '../../shared/tuning.js';
import { TUNING_VAR } from './tuning.js';

/**
 * `bin/start.ts` for processes the fault suite and the fuzz runner spawn: the same process,
 * with the fixed values the harness gives as JSON in SVC_TEST_TUNING (test/helpers/tuning.ts).
 */
const fixed = JSON.parse(process.env[TUNING_VAR] ?? '{}') as Partial<Tuning>;
const env = { ...process.env };
delete env[TUNING_VAR];
await main({ ...roleModules(role('start-tuned')), config: loadConfig(env, fixed) });
