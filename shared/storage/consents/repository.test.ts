import { describe, expect, it } from 'vitest';
import { decodeCursor, encodeCursor, keys } from './repository.js';

describe('page cursors', () => {
  const pk = keys.principal('app_a', 'SVC-REF-AAAAAAAA').pk;

  it('round-trip the DynamoDB key and nothing else', () => {
    const c = encodeCursor({ pk, sk: 'TXN#x', gsi1pk: 'leak', other: 1 });
    expect(c).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(decodeCursor(c, pk)).toEqual({ pk, sk: 'TXN#x' });
  });

  it.each([
    ['garbage', '!!!'],
    ['not JSON', Buffer.from('nope').toString('base64url')],
    [
      'another principal',
      encodeCursor({ pk: keys.principal('app_a', 'SVC-REF-BBBBBBBB').pk, sk: 'TXN#x' }),
    ],
    [
      'another app',
      encodeCursor({ pk: keys.principal('app_b', 'SVC-REF-AAAAAAAA').pk, sk: 'TXN#x' }),
    ],
    ['not a transaction key', encodeCursor({ pk, sk: 'PRINCIPAL' })],
  ])('refuse %s with 422', (_name, cursor) => {
    expect(() => decodeCursor(cursor, pk)).toThrow(
      expect.objectContaining({
        code: 'SVC_VALIDATION_FAILED',
        errors: [expect.objectContaining({ path: '/cursor' })],
      }),
    );
  });
});

describe('keys', () => {
  it('start every partition with the app id', () => {
    for (const k of [
      keys.principal('app_a', 'R').pk,
      keys.user('app_a', 'u').pk,
      keys.transaction('app_a', 'R', 't').pk,
    ])
      expect(k.startsWith('APP#app_a#')).toBe(true);
  });
});
