import type { ErrorRequestHandler, RequestHandler, Response } from 'express';
import { AppError, coerceError, errorCodes } from '../errors.js';
import type { Logger } from '../logger.js';

/** The problem+json body of an error (RFC 9457), `instance` and field errors when there are. */
export function problemJson(err: AppError, instance?: string): string {
  return JSON.stringify({
    type: `https://docs.svc.dev/errors/${err.code.toLowerCase()}`,
    title: errorCodes[err.code].title,
    status: err.status,
    detail: err.message,
    code: err.code,
    ...(instance ? { instance } : {}),
    ...(err.errors ? { errors: err.errors } : {}),
  });
}

export function sendProblem(res: Response, err: AppError, instance?: string) {
  if (err.retryAfterS !== undefined) res.setHeader('Retry-After', String(err.retryAfterS));
  res.status(err.status).type('application/problem+json').send(problemJson(err, instance));
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

/**
 * Other 4xx errors of Express's own parts: the router's (a path parameter that is not
 * percent-encoded UTF-8, `/consents/%E0%A4%A`) and body-parser's when the body cannot be read
 * at all (a gzip body that is not gzip). Without this they would be coerced to a 500.
 */
function fromHttpError(err: unknown): AppError | undefined {
  if (err instanceof AppError) return undefined;
  const status = (err as { status?: unknown } | undefined)?.status;
  if (typeof status !== 'number' || status < 400 || status > 499) return undefined;
  if (err instanceof URIError)
    return new AppError('SVC_VALIDATION_FAILED', 'The URL is not valid', {
      errors: [{ path: 'url', message: 'a path segment is not percent-encoded UTF-8' }],
    });
  if (status === 400) return new AppError('SVC_BAD_JSON', 'Request body could not be read');
  return undefined;
}

/** The last middleware: every error leaves as problem+json; 5xx are logged with their cause. */
export function problemHandler(log: Logger): ErrorRequestHandler {
  return (err: unknown, req, res, next) => {
    // The deadline already answered 503: the handler's late answer (or failure) is dropped.
    if (res.locals.deadlineExpired === true) {
      log.debug({ err, path: req.path }, 'late answer after the request deadline dropped');
      // The handler is done at last: admission control may count it out.
      (res.locals.admissionDone as (() => void) | undefined)?.();
      return;
    }
    if (res.headersSent) return next(err);
    const appErr =
      fromBodyParser(err as { type?: string }) ?? fromHttpError(err) ?? coerceError(err);
    if (res.locals.callerGone === true)
      log.debug({ err: appErr, path: req.path }, 'the caller was gone before the answer');
    else if (appErr.status >= 500)
      log.error({ err: appErr.cause ?? appErr, path: req.path }, 'request failed');
    sendProblem(res, appErr, req.originalUrl);
  };
}

export const notFoundHandler: RequestHandler = (req, _res, next) => {
  next(new AppError('SVC_NOT_FOUND', `No route for ${req.method} ${req.path}`));
};
