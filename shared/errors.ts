/**
 * The error registry: stable codes with their HTTP status and whether a retry may succeed.
 * Everything thrown inside the system is coerced to an AppError at each catch.
 */
export const errorCodes = {
  SVC_VALIDATION_FAILED: { status: 422, title: 'Validation failed', retriable: false },
  SVC_BAD_JSON: { status: 400, title: 'Malformed JSON', retriable: false },
  /** A setting the law does not allow (e.g. a grievance window above 90 days). */
  SVC_LEGAL_LIMIT: { status: 400, title: 'Beyond the legal limit', retriable: false },
  SVC_UNAUTHORIZED: { status: 401, title: 'Unauthorized', retriable: false },
  SVC_FORBIDDEN: { status: 403, title: 'Forbidden', retriable: false },
  SVC_NOT_FOUND: { status: 404, title: 'Not found', retriable: false },
  SVC_CONFLICT: { status: 409, title: 'Conflict', retriable: false },
  SVC_CHECKLIST_INCOMPLETE: {
    status: 409,
    title: 'Compliance checklist incomplete',
    retriable: false,
  },
  SVC_PAYLOAD_TOO_LARGE: { status: 413, title: 'Payload too large', retriable: false },
  SVC_HEADERS_TOO_LARGE: {
    status: 431,
    title: 'Request header fields too large',
    retriable: false,
  },
  SVC_RATE_LIMITED: { status: 429, title: 'Too many requests', retriable: true },
  SVC_UNAVAILABLE: { status: 503, title: 'Service unavailable', retriable: true },
  SVC_INTERNAL: { status: 500, title: 'Internal error', retriable: false },
} as const;

export type ErrorCode = keyof typeof errorCodes;

export interface FieldError {
  path: string;
  message: string;
}

export class AppError extends Error {
  override readonly name = 'AppError';
  readonly code: ErrorCode;
  readonly status: number;
  readonly retriable: boolean;
  readonly errors: FieldError[] | undefined;
  readonly retryAfterS: number | undefined;

  constructor(
    code: ErrorCode,
    detail?: string,
    opts: { errors?: FieldError[]; retryAfterS?: number; cause?: unknown } = {},
  ) {
    super(
      detail ?? errorCodes[code].title,
      opts.cause === undefined ? undefined : { cause: opts.cause },
    );
    this.code = code;
    this.status = errorCodes[code].status;
    this.retriable = errorCodes[code].retriable;
    this.errors = opts.errors;
    this.retryAfterS = opts.retryAfterS;
  }
}

/** Errors from the AWS SDK and kafkajs that mean "try again later". */
const transientNames = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
  'InternalServerError',
  'ServiceUnavailable',
  'TransactionInProgressException',
  'KafkaJSConnectionError',
  'KafkaJSNumberOfRetriesExceeded',
  'KafkaJSRequestTimeoutError',
  'KafkaJSBrokerNotFound',
  'KafkaJSLockTimeout',
  'KafkaJSConnectionClosedError',
  'KafkaJSTimeout',
  'TimeoutError',
  'RequestTimeout',
  'RequestTimeoutException',
  'AbortError',
]);

const transientCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ERR_SOCKET_CONNECTION_TIMEOUT',
]);

interface ErrorLike {
  name?: string;
  code?: string;
  message?: string;
  retriable?: boolean;
  cause?: unknown;
  $retryable?: unknown;
  $metadata?: { httpStatusCode?: number };
}

/**
 * True when the error, or any error in its `cause` chain, says "try again later": a known
 * transient name or socket code, a kafkajs error flagged retriable, an AWS SDK error marked
 * retryable, or an HTTP 5xx from the store.
 */
export function isTransient(err: unknown, depth = 0): boolean {
  const e = err as ErrorLike | undefined;
  if (!e || typeof e !== 'object' || depth > 5) return false;
  if (e instanceof AppError) return e.retriable;
  if (
    transientNames.has(e.name ?? '') ||
    transientCodes.has(e.code ?? '') ||
    e.retriable === true ||
    e.$retryable !== undefined ||
    (e.$metadata?.httpStatusCode ?? 0) >= 500
  )
    return true;
  return isTransient(e.cause, depth + 1);
}

/**
 * A message that can never be processed, whatever is retried: it is malformed or fails its
 * schema (or a handler said so with a 4xx-class code). Only these may be dead-lettered;
 * everything else, an unexplained error included, is retried while it lasts, so no event is
 * dropped because a dependency was down or a classification was missing.
 */
export function isPermanent(err: unknown): boolean {
  const e = coerceError(err);
  return !e.retriable && e.code !== 'SVC_INTERNAL';
}

export function coerceError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  if (isTransient(err)) {
    return new AppError('SVC_UNAVAILABLE', 'A backing service is unavailable; try again shortly', {
      retryAfterS: 1,
      cause: err,
    });
  }
  return new AppError('SVC_INTERNAL', 'Internal error', { cause: err });
}
