import { isTuningName, tuning, type Tuning } from '../../shared/tuning.js';

/**
 * Splits a test's record of settings into the environment and the fixed values it replaces
 * (shared/tuning.ts), so a test names both in one record; `loadConfig` refuses a fixed value's
 * name in the environment.
 */
export function splitTuning(record: Record<string, string>): {
  env: Record<string, string>;
  tuning: Partial<Tuning>;
} {
  const env: Record<string, string> = {};
  const fixed: Record<string, string | number> = {};
  for (const [k, v] of Object.entries(record)) {
    if (!isTuningName(k)) env[k] = v;
    else if (typeof tuning[k] === 'string') fixed[k] = v;
    else if (Number.isFinite(Number(v)) && v.trim() !== '') fixed[k] = Number(v);
    else throw new Error(`${k}: expected a number, got ${JSON.stringify(v)}`);
  }
  return { env, tuning: fixed as Partial<Tuning> };
}

/**
 * The variable that carries a spawned process's fixed values, as JSON, to its entry
 * (test/helpers/start-tuned.ts); the product never reads it.
 */
export const TUNING_VAR = 'SVC_TEST_TUNING';

/** The environment of a spawned test process: the settings, and the fixed values in TUNING_VAR. */
export function spawnEnv(record: Record<string, string>): Record<string, string> {
  const { env, tuning: fixed } = splitTuning(record);
  return { ...env, [TUNING_VAR]: JSON.stringify(fixed) };
}
