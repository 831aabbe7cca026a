import { z } from 'zod';

/** A boolean environment variable: `true`/`1` or `false`/`0`; unset or empty is false. */
export const envBool = z
  .enum(['true', 'false', '1', '0', ''])
  .optional()
  .transform((v) => v === 'true' || v === '1');

/** A boolean whose default is decided elsewhere: unset or empty is undefined. */
export const envBoolUnset = z
  .enum(['true', 'false', '1', '0', ''])
  .optional()
  .transform((v) => (v === undefined || v === '' ? undefined : v === 'true' || v === '1'));

/** A whole number of milliseconds (or another count) greater than zero. */
export const positiveInt = (fallback: number) =>
  z.coerce.number().int().positive().default(fallback);
