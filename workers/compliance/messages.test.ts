import { describe, expect, it } from 'vitest';
import { postbacksTopicMessage } from './messages.js';

const postback = {
  dispatchId: 'dsp_01JZ0000000000000000000000',
  referenceId: 'SVC-REF-ABCD2345',
  status: 'processed',
  completedAt: '2026-11-25T04:00:00.000Z',
  risk: 'none',
  tags: [],
  actions: [],
  appId: 'app_x',
  postbackId: 'pb_01JZ0000000000000000000000',
  receivedAt: '2026-11-25T04:00:01.000Z',
};

describe('postbacks topic messages', () => {
  it.each([
    ['a postback', { type: 'postback', ...postback }, 'postback'],
    ['a postback published before `type` existed', postback, 'postback'],
    [
      'an SLA check',
      { type: 'sla.check', dispatchId: 'dsp_1', at: '2026-11-25T04:00:00.000Z' },
      'sla.check',
    ],
  ])('reads %s', (_name, raw, type) => {
    const r = postbacksTopicMessage.safeParse(raw);
    expect(r.success).toBe(true);
    expect(r.data?.type).toBe(type);
  });

  it.each([
    ['an unknown type', { type: 'postback.v2', ...postback, type2: 1 }],
    ['an SLA check without its instant', { type: 'sla.check', dispatchId: 'dsp_1' }],
    ['a postback without its id', { ...postback, postbackId: undefined, type: 'postback' }],
    ['something else', { hello: 'world' }],
    ['not an object', 'sla.check'],
  ])('refuses %s', (_name, raw) => {
    expect(postbacksTopicMessage.safeParse(raw).success).toBe(false);
  });
});
