import type { z } from 'zod';
import { AppError } from '../errors.js';

/** Parses with a zod schema; failure is a 422 listing every failing path. */
export function parseBody<S extends z.ZodType>(
  schema: S,
  value: unknown,
  what = 'body',
): z.infer<S> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  throw new AppError('SVC_VALIDATION_FAILED', `The ${what} is not valid`, {
    errors: r.error.issues.map((i) => ({
      path: i.path.length ? `/${i.path.map(String).join('/')}` : '/',
      message: i.message,
    })),
  });
}
