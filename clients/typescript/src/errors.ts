import type { components } from './openapi.gen.js';

/** The service's problem+json body (RFC 9457), `code` one of its stable `SVC_*` codes. */
export type Problem = components['schemas']['Problem'];
export type ProblemCode = Problem['code'];

/** Every error the client throws is one of these. */
export class SvcError extends Error {
  override readonly name: string = 'SvcError';
}

/** The service answered with a problem (any status ≥ 400, after the retries the client made). */
export class ProblemError extends SvcError {
  override readonly name = 'ProblemError';
  readonly status: number;
  readonly code: ProblemCode | undefined;
  readonly problem: Problem | undefined;

  constructor(status: number, problem: Problem | undefined, text: string) {
    super(
      problem
        ? `${status} ${problem.code}: ${problem.detail ?? problem.title}`
        : `${status} ${text.slice(0, 200)}`,
    );
    this.status = status;
    this.problem = problem;
    this.code = problem?.code;
  }

  /** The field errors of a 422 (`errors[]`), empty otherwise. */
  get errors(): NonNullable<Problem['errors']> {
    return this.problem?.errors ?? [];
  }
}

/** No answer: the connection failed (after the retries the client made). */
export class NetworkError extends SvcError {
  override readonly name = 'NetworkError';
}

/** No answer within the client's `timeoutMs` for an attempt. */
export class TimeoutError extends SvcError {
  override readonly name = 'TimeoutError';
}

/** A webhook whose signature, timestamp or body does not verify. */
export class WebhookVerificationError extends SvcError {
  override readonly name = 'WebhookVerificationError';
}
