import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { STATUS_TOKEN, mintStatusToken, openStatusToken } from './decision-status.js';

/** Status tokens (docs/widget-status.md): opaque, bound to the app, and kept across rotations. */

const a = randomBytes(32);
const b = randomBytes(32);
const before = { NODE_ENV: 'test', SVC_ENCRYPTION_KEYS: `k1:${a.toString('base64')}` };
const during = {
  NODE_ENV: 'test',
  SVC_ENCRYPTION_KEYS: `k2:${b.toString('base64')},k1:${a.toString('base64')}`,
};
const after = { NODE_ENV: 'test', SVC_ENCRYPTION_KEYS: `k2:${b.toString('base64')}` };
const ID = '0192f3a4-5b6c-7d8e-9fa0-b1c2d3e4f500';

describe('status tokens', () => {
  it('name the transaction for their app only, and differ each time', () => {
    const t = mintStatusToken(before, 'app_one', ID);
    expect(t).toMatch(STATUS_TOKEN);
    expect(openStatusToken(before, 'app_one', t)).toBe(ID);
    expect(openStatusToken(before, 'app_two', t)).toBeUndefined();
    expect(mintStatusToken(before, 'app_one', ID)).not.toBe(t);
    expect(Buffer.from(t.slice(7), 'base64url').toString('hex')).not.toContain(
      ID.replace(/-/g, ''),
    );
  });

  it('open under every key of the ring, until the key leaves it', () => {
    const old = mintStatusToken(before, 'app_one', ID);
    expect(openStatusToken(during, 'app_one', old)).toBe(ID);
    const fresh = mintStatusToken(during, 'app_one', ID);
    expect(openStatusToken(after, 'app_one', fresh)).toBe(ID);
    expect(openStatusToken(after, 'app_one', old)).toBeUndefined();
    // Made under the current key: an older ring cannot open it.
    expect(openStatusToken(before, 'app_one', fresh)).toBeUndefined();
  });

  it('refuse anything else unread', () => {
    for (const junk of ['', 'svc_st_', `svc_st_${'A'.repeat(58)}`, `svc_st_${'A'.repeat(60)}`])
      expect(openStatusToken(before, 'app_one', junk)).toBeUndefined();
    expect(() => mintStatusToken(before, 'app_one', 'not-a-uuid')).toThrow(RangeError);
  });
});
