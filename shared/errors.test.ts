import { describe, expect, it } from 'vitest';
import { AppError, coerceError } from './errors.js';

describe('coerceError', () => {
  it.each([
    [{ name: 'ProvisionedThroughputExceededException' }, 'SVC_UNAVAILABLE', true],
    [{ name: 'KafkaJSConnectionError' }, 'SVC_UNAVAILABLE', true],
    [Object.assign(new Error('x'), { code: 'ECONNREFUSED' }), 'SVC_UNAVAILABLE', true],
    [new Error('boom'), 'SVC_INTERNAL', false],
    ['a string', 'SVC_INTERNAL', false],
    [new AppError('SVC_CONFLICT'), 'SVC_CONFLICT', false],
  ])('%o → %s', (input, code, retriable) => {
    const e = coerceError(input);
    expect(e.code).toBe(code);
    expect(e.retriable).toBe(retriable);
  });
  it('keeps status from the registry', () => {
    expect(new AppError('SVC_RATE_LIMITED').status).toBe(429);
    expect(new AppError('SVC_VALIDATION_FAILED').status).toBe(422);
  });
});
