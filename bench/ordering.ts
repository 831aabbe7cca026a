import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import type { RunningProcess } from '../bin/process.js';
import { createApp } from '../shared/domain/apps.js';
import type { ConsentEvent, EventType } from '../shared/domain/consent/events.js';
import { newEventId, newReferenceId } from '../shared/domain/ids.js';
import type { App, WebhookOrdering } from '../shared/domain/types.js';
import { startBenchDispatcher } from './dispatch.js';
import { benchStack, percentile } from './lib.js';
import type { BenchOutcome } from './record.js';

const RATE = Number(process.env.BENCH_ORDERING_RATE ?? 50);
const SECONDS = Number(process.env.BENCH_ORDERING_SECONDS ?? 30);
/** Principals per app whose grant fails until the run ends, a withdrawal queued behind it. */
const STUCK = Number(process.env.BENCH_ORDERING_STUCK ?? 5);
const DRAIN_S = 120;
const SETTINGS = { rate: RATE, seconds: SECONDS, stuck: STUCK };

/**
 * What per-principal order costs the principals it does not hold (docs/webhooks.md,
 * Ordering): one dispatcher, two apps fed the same events straight into Kafka (a breakdown,
 * not the REST path). In each app `STUCK` principals' grants fail (500) for the whole run,
 * retried on the sandbox's compressed schedule, each with a withdrawal behind it, while other
 * principals' grants arrive at `RATE`/s per app. The app with `webhookOrdering: 'independent'`
 * is the baseline; the figure is the other principals' latency (webhook arrival − createdAt)
 * in the app with `'principal'` beside it, in the same run.
 */
function event(app: App, type: EventType, p: { referenceId: string; consentId: string }, seq = 1) {
  const withdrawn = type === 'consent.withdrawn';
  return {
    id: newEventId(),
    type,
    apiVersion: 'v1',
    createdAt: new Date().toISOString(),
    appId: app.appId,
    environment: app.environment,
    data: {
      referenceId: p.referenceId,
      userId: null,
      consentId: p.consentId,
      sequence: seq,
      recordIds: [randomUUID()],
      purposes: { marketing: !withdrawn },
      state: { marketing: withdrawn ? 'withdrawn' : 'granted' },
      noticeId: null,
      noticeVersion: null,
      expiresAt: null,
    },
  } as ConsentEvent;
}

const principal = () => ({ referenceId: newReferenceId(), consentId: randomUUID() });

async function receiver() {
  const stuck = new Set<string>();
  let failing = true;
  /** Per path: first arrival of each other principal's event, and the stuck ones' order. */
  const arrivals = new Map<string, number[]>();
  const stuckOrder = new Map<string, string[]>();
  const seen = new Set<string>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = Date.now();
      const e = JSON.parse(Buffer.concat(chunks).toString()) as ConsentEvent;
      const path = req.url ?? '/';
      if (stuck.has(e.data.referenceId)) {
        if (failing && e.type === 'consent.granted') return void res.writeHead(500).end('{}');
        const order = stuckOrder.get(path) ?? [];
        const key = `${e.data.referenceId} ${e.type}`;
        if (!order.includes(key)) order.push(key);
        stuckOrder.set(path, order);
      } else if (!seen.has(e.id)) {
        seen.add(e.id);
        const list = arrivals.get(path) ?? [];
        list.push(at - Date.parse(e.createdAt));
        arrivals.set(path, list);
      }
      res.end('{"ok":true}');
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    stuck,
    arrivals,
    stuckOrder,
    recover: () => (failing = false),
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

async function publish(p: RunningProcess, events: ConsentEvent[]) {
  await p.rt.producer.send(
    events.map((e) => ({
      topic: p.rt.topics.consentEvents,
      key: `${e.appId}:${e.data.referenceId}`,
      value: JSON.stringify(e),
    })),
  );
}

async function waitFor(cond: () => boolean, seconds: number) {
  const end = Date.now() + seconds * 1000;
  while (!cond() && Date.now() < end) await new Promise((r) => setTimeout(r, 100));
  return cond();
}

const summary = (lat: number[]) => {
  const s = [...lat].sort((a, b) => a - b);
  return { delivered: s.length, p50Ms: percentile(s, 50), p99Ms: percentile(s, 99) };
};

export async function run(): Promise<BenchOutcome> {
  const stack = await benchStack();
  const recv = await receiver();
  const startedAt = Date.now();
  const p = await startBenchDispatcher(stack, 'bench-ordering');
  try {
    const mk = async (ordering: WebhookOrdering) =>
      (
        await createApp(p.rt, {
          name: `bench ${ordering}`,
          environment: 'sandbox',
          webhookUrl: `${recv.base}/${ordering}`,
          allowedOrigins: ['http://localhost:3000'],
          contactEmail: 'ops@example.com',
          // Retries 1000× faster than live (5 ms, 300 ms, 1.8 s, 7.2 s, …).
          slaTimeScale: 1000,
          webhookOrdering: ordering,
        })
      ).app;
    const apps = [await mk('independent'), await mk('principal')];
    // The dispatcher's first minute on a partition looks every event up in the ledger.
    const steady = startedAt + 62_000 - Date.now();
    if (steady > 0) await new Promise((r) => setTimeout(r, steady));

    for (const app of apps)
      for (let i = 0; i < STUCK; i++) {
        const who = principal();
        recv.stuck.add(who.referenceId);
        await publish(p, [event(app, 'consent.granted', who, 1)]);
        await new Promise((r) => setTimeout(r, 200));
        await publish(p, [event(app, 'consent.withdrawn', who, 2)]);
      }
    const t0 = Date.now();
    let sent = 0;
    while (sent < RATE * SECONDS) {
      await publish(
        p,
        apps.map((app) => event(app, 'consent.granted', principal())),
      );
      sent++;
      const wait = t0 + (sent / RATE) * 1000 - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
    const total = RATE * SECONDS;
    await waitFor(
      () => apps.every((a) => (recv.arrivals.get(`/${a.webhookOrdering}`)?.length ?? 0) >= total),
      DRAIN_S,
    );
    recv.recover();
    // Each stuck principal's grant, then its withdrawal, once the grants are answered 2xx.
    await waitFor(
      () =>
        apps.every((a) => (recv.stuckOrder.get(`/${a.webhookOrdering}`)?.length ?? 0) >= 2 * STUCK),
      DRAIN_S,
    );
    const other = (a: App) => summary(recv.arrivals.get(`/${a.webhookOrdering}`) ?? []);
    const independent = other(apps[0]!);
    const ordered = other(apps[1]!);
    const withdrawalsFirst = (a: App) => {
      const order = recv.stuckOrder.get(`/${a.webhookOrdering}`) ?? [];
      return [...recv.stuck].filter((ref) => {
        const w = order.indexOf(`${ref} consent.withdrawn`);
        const g = order.indexOf(`${ref} consent.granted`);
        return w !== -1 && (g === -1 || w < g);
      }).length;
    };
    const held =
      (await p.rt.registry.getSingleMetric('svc_webhook_ordering_total')?.get())?.values.find(
        (v) => v.labels.step === 'held',
      )?.value ?? 0;
    const figures = {
      sent: total,
      ordered: { ...ordered, withdrawalsBeforeTheirGrant: withdrawalsFirst(apps[1]!), held },
      p99Ratio: Math.round((ordered.p99Ms / independent.p99Ms) * 100) / 100,
    };
    const baseline = {
      independent: { ...independent, withdrawalsBeforeTheirGrant: withdrawalsFirst(apps[0]!) },
    };
    console.log(
      `other principals, p50 / p99: principal ${ordered.p50Ms} / ${ordered.p99Ms} ms ` +
        `(${ordered.delivered}/${total}), independent ${independent.p50Ms} / ${independent.p99Ms} ms ` +
        `(${independent.delivered}/${total}); p99 ratio ${figures.p99Ratio}`,
    );
    console.log(
      `stuck principals' withdrawals delivered before their grant: principal ` +
        `${figures.ordered.withdrawalsBeforeTheirGrant}/${STUCK}, independent ` +
        `${baseline.independent.withdrawalsBeforeTheirGrant}/${STUCK}; held ${held}`,
    );
    return { figures, baseline, settings: SETTINGS };
  } finally {
    await p.close();
    await recv.close();
    await stack.stop();
  }
}
