import { describe, expect, it } from 'vitest';
import { createUserConsent } from '../../shared/domain/consent/index.js';
import { useRecordApi } from './fixture.js';

/**
 * A change whose caller is gone (`WriteContext.signal` aborted: the HTTP caller hung up, or the
 * deadline answered it 503) is not sent to the store: nothing is written, so no event can leave.
 * The same write with a live signal is applied: only the signal differs.
 */
const { rec, uid, get } = useRecordApi('consent-abandoned-write');

const ctx = (signal: AbortSignal) => ({
  rt: rec.f.p.rt,
  app: rec.a.app,
  actor: { source: 'api' as const, credential: 'test' },
  signal,
});

describe('a change nobody waits for', () => {
  it('is not applied once its signal aborted', async () => {
    const userId = uid();
    const body = { userId, email: 'gone@shop.example', consents: { analytics: true } };
    await expect(createUserConsent(ctx(AbortSignal.abort()), body)).rejects.toMatchObject({
      code: 'SVC_UNAVAILABLE',
    });
    expect((await get(rec.a, userId)).status).toBe(404);

    const made = await createUserConsent(ctx(new AbortController().signal), body);
    expect(made.userId).toBe(userId);
    expect((await get(rec.a, userId)).status).toBe(200);
  });
});
