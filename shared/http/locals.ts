import type { Response } from 'express';
import { AppError } from '../errors.js';
import type { ApiKey, App } from '../domain/types.js';

/** What authentication middleware leaves on `res.locals` for the handlers after it. */
export interface AuthLocals {
  app?: App;
  apiKey?: ApiKey;
  admin?: boolean;
  /** How the caller authenticated: decides e.g. the `source` of a consent change. */
  via?: 'admin' | 'apiKey' | 'secretKey' | 'siteKey';
  /** The one principal a principal token (browser path, portal) lets the caller act for. */
  principal?: { referenceId: string; expiresAt: Date };
}

export function locals(res: Response): AuthLocals {
  return res.locals as AuthLocals;
}

/** The authenticated app; a route that calls this without auth middleware is a bug (401). */
export function appOf(res: Response): App {
  const app = locals(res).app;
  if (!app) throw new AppError('SVC_UNAUTHORIZED', 'No credentials');
  return app;
}
