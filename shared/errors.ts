/**
 * The error registry: stable codes with their HTTP status and whether a retry may succeed.
 * Everything thrown inside the system is coerced to an AppError at each catch.
 */
export const errorCodes = {
  SVC_VALIDATION_FAILED: { status: 422, title: 'Validation failed', retriable: false },
  SVC_BAD_JSON: { status: 400, title: 'Malformed JSON', retriable: false },
  SVC_UNAUTHORIZED: { status: 401, title: 'Unauthorized', retriable: false },
  SVC_FORBIDDEN: { status: 403, title: 'Forbidden', retriable: false },
  SVC_NOT_FOUND: { status: 404, title: 'Not found', retriable: false },
  SVC_CONFLICT: { status: 409, title: 'Conflict', retriable: false },
  SVC_PAYLOAD_TOO_LARGE: { status: 413, title: 'Payload too large', retriable: false },
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
  'TimeoutError',
]);

const transientCodes = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EAI_AGAIN']);

export function coerceError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  const e = err as
    { name?: string; code?: string; message?: string; retriable?: boolean } | undefined;
  if (
    e &&
    (transientNames.has(e.name ?? '') || transientCodes.has(e.code ?? '') || e.retriable === true)
  ) {
    return new AppError('SVC_UNAVAILABLE', 'A backing service is unavailable; try again shortly', {
      retryAfterS: 1,
      cause: err,
    });
  }
  return new AppError('SVC_INTERNAL', 'Internal error', { cause: err });
}
