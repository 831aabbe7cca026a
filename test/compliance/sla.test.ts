import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { PostbackMessage } from '../../shared/domain/compliance/postback.js';
import { verifyDispatchChain } from '../../shared/ledger/queries.js';
import { startPipeline, type Pipeline, type PipelineApp } from './fixture.js';

/**
 * End to end: consent withdrawn over the record API → signed webhook to a loopback receiver →
 * postback (or silence) → flag history read back from the ledger. Sandbox time scale 3600
 * turns the 1 h window into 1 s (app `fast`); app `slow` (scale 60: 60 s) leaves room to
 * answer in time, and its deadlines are reached by moving the workers' clock.
 */
let f: Pipeline;
let fast: PipelineApp;
let slow: PipelineApp;

beforeAll(async () => {
  f = await startPipeline('compliance-sla');
  fast = await f.createApp(3600);
  slow = await f.createApp(60);
});
afterAll(async () => {
  await f?.close();
});

const iso = (ms: number) => new Date(ms).toISOString();
const answered: string[] = [];
const silent: string[] = [];

describe('SLA escalation of consent.withdrawn', () => {
  it('no postback: at_risk past the window, breach past window + grace, each at its deadline', async () => {
    const w = await f.withdrawnUser(fast, 'silent-user');
    silent.push(w.dispatchId);
    const created = Date.parse(w.event.createdAt);
    const due = Date.parse(w.event.data.postback!.dueAt);
    expect(due - created).toBe(1000);
    const d = await f.waitForFlags(w.dispatchId, ['at_risk', 'breach']);
    expect(d.flagHistory).toEqual([
      { flag: 'at_risk', at: iso(due + 1), cause: 'sla_missed' },
      { flag: 'breach', at: iso(due + 1000 + 1), cause: 'sla_breached' },
    ]);
    expect(d).toMatchObject({
      complianceFlag: 'breach',
      postbacks: [],
      deliveryStatus: 'delivered',
    });
    await f.waitForMetric('svc_sla_breaches_total', { event: 'consent.withdrawn' }, 1);
    await f.waitForMetric('svc_compliance_flag_transitions_total', { flag: 'at_risk' }, 1);
  });

  it('processed with risk none in time: ok', async () => {
    const w = await f.withdrawnUser(slow, 'prompt-user');
    answered.push(w.dispatchId);
    const r = await f.postback(slow, {
      dispatchId: w.dispatchId,
      referenceId: w.referenceId,
      status: 'processed',
      risk: 'none',
      tags: ['crm'],
    });
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    const d = await f.waitForFlags(w.dispatchId, ['ok']);
    expect(d.flagHistory).toEqual([{ flag: 'ok', at: r.body.receivedAt, cause: 'postback' }]);
    expect(d.postbacks).toEqual([
      expect.objectContaining({
        postbackId: r.body.postbackId,
        receivedAt: r.body.receivedAt,
        status: 'processed',
        risk: 'none',
        tags: ['crm'],
        actions: [{ type: 'stop_processing', result: 'done' }],
        referenceId: w.referenceId,
      }),
    ]);
    await f.waitForMetric('svc_postbacks_total', { status: 'processed', flag: 'ok' }, 1);
    await vi.waitFor(async () => {
      const hist = (await f.rt.registry.getSingleMetric('svc_time_to_postback_seconds')!.get())
        .values as { metricName?: string; value: number; labels: Record<string, unknown> }[];
      const count = hist.find((v) => v.metricName === 'svc_time_to_postback_seconds_count');
      expect(count).toMatchObject({ value: 1, labels: { event: 'consent.withdrawn' } });
    });
  });

  it('risk critical: critical, whatever the status', async () => {
    const w = await f.withdrawnUser(slow, 'critical-user');
    answered.push(w.dispatchId);
    const r = await f.postback(slow, {
      dispatchId: w.dispatchId,
      referenceId: w.referenceId,
      status: 'processed',
      risk: 'critical',
    });
    expect(r.status).toBe(202);
    const d = await f.waitForFlags(w.dispatchId, ['critical']);
    expect(d.flagHistory[0]!.cause).toBe('postback');
    await f.waitForMetric('svc_compliance_flag_transitions_total', { flag: 'critical' }, 1);
  });

  it('applies a redelivered postback once', async () => {
    const id = answered[0]!;
    const first = (await f.ledger(id)).postbacks[0]!;
    const { prevHash: _p, hash: _h, ...rest } = first;
    const message: PostbackMessage = { ...rest, type: 'postback', appId: slow.appId };
    const again = { ...message, postbackId: `pb_${'1'.repeat(26)}`, status: 'deleted' as const };
    // Same key, so same partition: when the second shows up, the redelivery was handled.
    await f.rt.producer.send(
      [message, again].map((m) => ({
        topic: f.rt.topics.postbacks,
        key: id,
        value: JSON.stringify(m),
      })),
    );
    const d = await vi.waitFor(
      async () => {
        const got = await f.ledger(id);
        expect(got.postbacks.map((x) => x.postbackId)).toContain(again.postbackId);
        return got;
      },
      { timeout: 10_000, interval: 100 },
    );
    expect(d.postbacks.map((x) => x.postbackId)).toEqual([message.postbackId, again.postbackId]);
    expect(d.flagHistory.map((x) => x.flag)).toEqual(['ok']);
  });

  it('keeps answered dispatches as they are once their deadlines pass', async () => {
    const control = await f.withdrawnUser(slow, 'slow-silent-user');
    silent.push(control.dispatchId);
    // Three minutes later for the workers: past the 60 s window and the 60 s grace of all three.
    f.clock.advance(3 * 60_000);
    await f.waitForFlags(control.dispatchId, ['at_risk', 'breach']);
    expect((await f.ledger(answered[0]!)).flagHistory.map((x) => x.flag)).toEqual(['ok']);
    expect((await f.ledger(answered[1]!)).flagHistory.map((x) => x.flag)).toEqual(['critical']);
    await f.waitForMetric('svc_sla_breaches_total', { event: 'consent.withdrawn' }, 2);
  });

  it('reports the dispatches still awaiting a postback, once, from the counters', async () => {
    await vi.waitFor(
      async () => {
        expect(
          await f.metric('svc_dispatches_awaiting_postback', { event: 'consent.withdrawn' }),
        ).toBe(silent.length);
        expect(
          await f.metric('svc_dispatches_awaiting_postback_near_deadline', {
            event: 'consent.withdrawn',
          }),
        ).toBe(0);
        expect(await f.metric('svc_unconfirmed_erasures')).toBe(0);
      },
      { timeout: 10_000, interval: 100 },
    );
    const exposed = await f.rt.registry.metrics();
    expect(exposed).toMatch(/svc_sla_breaches_total\{event="consent.expired"\} 0/);
  });

  it('leaves every chain verifiable', async () => {
    for (const id of [...silent, ...answered])
      expect(await verifyDispatchChain(f.rt, id)).toMatchObject({ ok: true });
  });
});
