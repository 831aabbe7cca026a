import { Agent, request } from 'node:http';
import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { randomUUID } from 'node:crypto';
import { loadConfig } from '../shared/config.js';
import { createLogger } from '../shared/logger.js';
import { startProcess } from '../bin/process.js';
import { adminService } from '../services/admin/index.js';
import { consentsService } from '../services/consents/index.js';
import { benchStack, closedLoop, fmt } from './lib.js';
import type { BenchOutcome } from './record.js';

const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);

/** POST with a keep-alive agent; resolves with the status code (body drained). */
function post(
  agent: Agent,
  url: URL,
  headers: Record<string, string>,
  body: string,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        agent,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          ...headers,
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * POST /api/v1/consents throughput and latency, next to the raw DynamoDB Local
 * TransactWriteItems rate of a transaction of the same size, measured in the same run.
 */
export async function run(): Promise<BenchOutcome> {
  const stack = await benchStack();
  const admin = `bench-admin-token-${randomUUID()}`;
  const config = loadConfig({
    LOG_LEVEL: 'silent',
    KAFKA_BROKERS: stack.kafkaBrokers,
    DYNAMODB_ENDPOINT: stack.dynamoEndpoint,
    SVC_ADMIN_TOKEN: admin,
    PORT: '0',
    RATE_LIMIT_RPS: '1000000',
    RATE_LIMIT_BURST: '1000000',
  });
  const p = await startProcess({
    name: 'bench-ingress',
    services: [adminService, consentsService],
    workers: [],
    config,
    log: createLogger({ level: 'silent' }),
  });
  try {
    const adminPost = async (path: string, body: unknown) => {
      const r = await fetch(`${p.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      if (!r.ok) throw new Error(`${path}: ${r.status} ${await r.text()}`);
      return (await r.json()) as Record<string, unknown>;
    };
    const created = await adminPost('/api/v1/admin/apps', {
      name: 'bench',
      environment: 'sandbox',
      webhookUrl: 'http://127.0.0.1:9/hook',
      allowedOrigins: ['http://localhost:3000'],
      contactEmail: 'ops@example.com',
    });
    const appId = (created.app as { appId: string }).appId;
    const key = (
      await adminPost(`/api/v1/admin/apps/${appId}/api-keys`, {
        name: 'bench',
        scopes: ['consents:write'],
      })
    ).key as string;

    // Baseline: the same number of items per TransactWriteItems as one POST writes
    // (principal, user pointer, transaction, 2 record pointers, 2 history entries, 2 outbox events).
    const ITEMS = 9;
    const doc = p.rt.dynamo.doc;
    const table = p.rt.tables.entities;
    // DynamoDB Local runs 3-4x faster once its JIT has warmed up: warm both paths first.
    const WARMUP_S = Number(process.env.BENCH_WARMUP_SECONDS ?? 15);
    const warm = async (seconds: number, fn: (i: number) => Promise<void>) =>
      closedLoop(fn, { concurrency: CONCURRENCY, seconds, warmupSeconds: 0 });
    const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
    const url = new URL('/api/v1/consents', p.url);
    const postOne = async (i: number) => {
      const status = await post(
        agent,
        url,
        { authorization: `Bearer ${key}` },
        JSON.stringify({
          userId: `u-${randomUUID()}-${i}`,
          email: `u${i}@example.com`,
          consents: { analytics: true, marketing: false },
        }),
      );
      if (status !== 201) throw new Error(`POST /api/v1/consents answered ${status}`);
    };
    await warm(WARMUP_S, postOne);

    const raw = await closedLoop(
      async () => {
        const id = randomUUID();
        await doc.send(
          new TransactWriteCommand({
            TransactItems: Array.from({ length: ITEMS }, (_, j) => ({
              Put: {
                TableName: table,
                Item: {
                  pk: `BENCH#${id}`,
                  sk: `I#${j}`,
                  payload: 'x'.repeat(200),
                  at: new Date().toISOString(),
                },
                ConditionExpression: 'attribute_not_exists(pk)',
              },
            })),
          }),
        );
      },
      { concurrency: CONCURRENCY, seconds: SECONDS },
    );

    const api = await closedLoop(postOne, { concurrency: CONCURRENCY, seconds: SECONDS });
    agent.destroy();

    console.log(
      `concurrency ${CONCURRENCY}, ${SECONDS} s each, one machine (client, service, DynamoDB Local, Kafka share its cores)`,
    );
    console.log(`baseline  raw TransactWriteItems (${ITEMS} items): ${fmt(raw)}`);
    console.log(`service   POST /api/v1/consents:            ${fmt(api)}`);
    console.log(
      `ratio     service / baseline throughput:    ${(api.perSecond / raw.perSecond).toFixed(2)}  (target ≥ 0.70; p99 target ≤ 30 ms)`,
    );
    return {
      figures: {
        service: api,
        ratio: api.perSecond / raw.perSecond,
        targets: { ratio: 0.7, p99Ms: 30 },
      },
      baseline: { rawTransactWriteItems: { items: ITEMS, ...raw } },
      settings: { concurrency: CONCURRENCY, seconds: SECONDS, warmupSeconds: WARMUP_S },
    };
  } finally {
    await p.close();
    await stack.stop();
  }
}
