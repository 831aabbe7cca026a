import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Runtime } from '../../shared/runtime.js';
import { dynamoPrincipalLanes } from '../../shared/storage/webhooks/ordering.js';
import {
  MAX_HELD,
  memoryPrincipalLanes,
  type PrincipalLanes,
} from '../../shared/domain/webhook-ordering.js';
import { testRuntime } from '../helpers/stack.js';

/**
 * One conformance suite for the principal lanes' port (shared/domain/webhook-ordering.ts), run on the
 * in-memory adapter and on the DynamoDB adapter against DynamoDB Local.
 */
let rt: Runtime;
beforeAll(async () => {
  rt = await testRuntime('principal-lanes');
});
afterAll(async () => {
  await rt.close();
});

let n = 0;
const principal = () => ({ app: 'app_lanes', ref: `SVC-REF-LANE${n++}` });

const adapters: [string, () => PrincipalLanes][] = [
  ['memory', () => memoryPrincipalLanes()],
  ['dynamodb', () => dynamoPrincipalLanes(rt)],
];

describe.each(adapters)('principal lanes on %s', (_name, make) => {
  it('claim makes the first dispatch the head; a second claim is refused', async () => {
    const lanes = make();
    const { app, ref } = principal();
    expect(await lanes.read(app, ref)).toBeUndefined();
    expect(await lanes.claim(app, ref, 'dsp_a')).toBe(true);
    expect(await lanes.claim(app, ref, 'dsp_b')).toBe(false);
    const lane = await lanes.read(app, ref);
    expect(lane).toMatchObject({ head: 'dsp_a', held: [] });
    expect(lane!.since).toBeGreaterThan(Date.now() - 60_000);
  });

  it('hold queues in order, and only on the version read', async () => {
    const lanes = make();
    const { app, ref } = principal();
    await lanes.claim(app, ref, 'dsp_a');
    const v1 = (await lanes.read(app, ref))!;
    expect(await lanes.hold(app, ref, v1, 'dsp_b')).toBe(true);
    // A second writer that read the same version loses: it must read again.
    expect(await lanes.hold(app, ref, v1, 'dsp_c')).toBe(false);
    const v2 = (await lanes.read(app, ref))!;
    expect(await lanes.hold(app, ref, v2, 'dsp_c')).toBe(true);
    expect(await lanes.read(app, ref)).toMatchObject({ head: 'dsp_a', held: ['dsp_b', 'dsp_c'] });
  });

  it('advance moves the first held to the head, and removes the lane when none waits', async () => {
    const lanes = make();
    const { app, ref } = principal();
    await lanes.claim(app, ref, 'dsp_a');
    await lanes.hold(app, ref, (await lanes.read(app, ref))!, 'dsp_b');
    const before = (await lanes.read(app, ref))!;
    expect(await lanes.advance(app, ref, before)).toBe(true);
    // A stale copy of the lane moves nothing.
    expect(await lanes.advance(app, ref, before)).toBe(false);
    const after = (await lanes.read(app, ref))!;
    expect(after).toMatchObject({ head: 'dsp_b', held: [] });
    expect(await lanes.advance(app, ref, after)).toBe(true);
    expect(await lanes.read(app, ref)).toBeUndefined();
    // Gone: the next dispatch claims a new lane.
    expect(await lanes.claim(app, ref, 'dsp_c')).toBe(true);
  });

  it('a full lane takes no more held dispatches', async () => {
    const lanes = make();
    const { app, ref } = principal();
    await lanes.claim(app, ref, 'dsp_head');
    const full = { ...(await lanes.read(app, ref))!, held: Array(MAX_HELD).fill('dsp_x') };
    expect(await lanes.hold(app, ref, full, 'dsp_more')).toBe(false);
  });

  it('lanes of other principals and apps are apart', async () => {
    const lanes = make();
    const { ref } = principal();
    await lanes.claim('app_one', ref, 'dsp_1');
    expect(await lanes.claim('app_two', ref, 'dsp_2')).toBe(true);
    expect(await lanes.claim('app_one', `${ref}X`, 'dsp_3')).toBe(true);
    expect((await lanes.read('app_one', ref))!.head).toBe('dsp_1');
  });
});
