import { describe, expect, it } from 'vitest';
import { redactedBody } from './redact.js';

describe('redactedBody', () => {
  it('nulls the user id and keeps everything else as it was', () => {
    const body = JSON.stringify({ id: 'evt_1', data: { referenceId: 'SVC-REF-1', userId: 'u-1' } });
    expect(JSON.parse(redactedBody(body)!)).toEqual({
      id: 'evt_1',
      data: { referenceId: 'SVC-REF-1', userId: null },
    });
  });

  it.each([
    ['no user id', JSON.stringify({ data: { userId: null } })],
    ['not an event', JSON.stringify({ other: 1 })],
    ['not JSON', '{'],
    ['not a string', 42],
  ])('leaves a body with %s alone', (_name, body) => {
    expect(redactedBody(body)).toBeUndefined();
  });
});
