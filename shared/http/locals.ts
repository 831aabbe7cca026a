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

/**
 * A signal aborted once nobody waits for this request's outcome: its connection closed before
 * the answer was sent (a client that timed out and hung up; `res.locals.callerGone`, so the
 * error that follows is not logged as a failure), or the deadline (`HTTP_DEADLINE_MS`) answered
 * it 503 already. A change not yet sent to the store is then not made.
 */
export function abandonedBy(res: Response): AbortSignal {
  const gone = new AbortController();
  const closed = () => {
    if (res.writableFinished) {
      if (res.locals.deadlineExpired === true) gone.abort();
      return;
    }
    res.locals.callerGone = true;
    gone.abort();
  };
  if (res.closed) closed();
  else res.once('close', closed);
  return gone.signal;
}

/** The authenticated app; a route that calls this without auth middleware is a bug (401). */
export function appOf(res: Response): App {
  const app = locals(res).app;
  if (!app) throw new AppError('SVC_UNAUTHORIZED', 'No credentials');
  return app;
}
