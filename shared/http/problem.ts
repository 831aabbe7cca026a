import type { ErrorRequestHandler, RequestHandler, Response } from 'express';
import { AppError, coerceError, errorCodes } from '../errors.js';
import type { Logger } from '../logger.js';

export function sendProblem(res: Response, err: AppError, instance?: string) {
  if (err.retryAfterS !== undefined) res.setHeader('Retry-After', String(err.retryAfterS));
  res
    .status(err.status)
    .type('application/problem+json')
    .send(
      JSON.stringify({
        type: `https://docs.svc.dev/errors/${err.code.toLowerCase()}`,
        title: errorCodes[err.code].title,
        status: err.status,
        detail: err.message,
        code: err.code,
        ...(instance ? { instance } : {}),
        ...(err.errors ? { errors: err.errors } : {}),
      }),
    );
}

/** body-parser errors carry `type`; map them to the registry. */
function fromBodyParser(err: { type?: string; status?: number }): AppError | undefined {
  if (err.type === 'entity.too.large')
    return new AppError('SVC_PAYLOAD_TOO_LARGE', 'Request body is too large');
  if (err.type === 'entity.parse.failed')
    return new AppError('SVC_BAD_JSON', 'Request body is not valid JSON');
  if (err.type === 'encoding.unsupported' || err.type === 'charset.unsupported')
    return new AppError('SVC_VALIDATION_FAILED', 'Unsupported body encoding');
  return undefined;
}

/** The last middleware: every error leaves as problem+json; 5xx are logged with their cause. */
export function problemHandler(log: Logger): ErrorRequestHandler {
  return (err: unknown, req, res, next) => {
    // The deadline already answered 503: the handler's late answer (or failure) is dropped.
    if (res.locals.deadlineExpired === true) {
      log.debug({ err, path: req.path }, 'late answer after the request deadline dropped');
      return;
    }
    if (res.headersSent) return next(err);
    const appErr = fromBodyParser(err as { type?: string }) ?? coerceError(err);
    if (appErr.status >= 500)
      log.error({ err: appErr.cause ?? appErr, path: req.path }, 'request failed');
    sendProblem(res, appErr, req.originalUrl);
  };
}

export const notFoundHandler: RequestHandler = (req, _res, next) => {
  next(new AppError('SVC_NOT_FOUND', `No route for ${req.method} ${req.path}`));
};
