import { ListTablesCommand, DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningProcess } from '../../bin/process.js';
import type { ServiceModule } from '../../shared/module.js';
import { applyDefinitions } from '../../bin/compose.js';
import { testProcess } from '../helpers/stack.js';
import { relayWorker } from '../../workers/relay/index.js';

const echo: ServiceModule = {
  name: 'echo',
  mount(app) {
    app.post('/echo', (req, res) => {
      res.json(req.body);
    });
  },
};

let p: RunningProcess;
beforeAll(async () => {
  p = await testProcess('process', [echo], [relayWorker], { BODY_LIMIT_BYTES: '1024' });
});
afterAll(async () => {
  await p.close();
});

describe('a process on the real stack', () => {
  it('answers /healthz and /readyz with DynamoDB and Kafka checked', async () => {
    expect((await fetch(`${p.url}/healthz`)).status).toBe(200);
    const ready = await fetch(`${p.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({
      status: 'ready',
      checks: { dynamodb: 'ok', kafka: 'ok' },
    });
  });

  it('answers errors as problem+json', async () => {
    const missing = await fetch(`${p.url}/nothing-here`);
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).toContain('application/problem+json');
    expect(await missing.json()).toMatchObject({ status: 404, code: 'SVC_NOT_FOUND' });

    const bad = await fetch(`${p.url}/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"a":',
    });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ code: 'SVC_BAD_JSON' });

    const big = await fetch(`${p.url}/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ a: 'x'.repeat(2000) }),
    });
    expect(big.status).toBe(413);
    expect(await big.json()).toMatchObject({ code: 'SVC_PAYLOAD_TOO_LARGE' });
  });

  it('exports HTTP metrics by route and status', async () => {
    await fetch(`${p.url}/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    const text = await (await fetch(`${p.url}/metrics`)).text();
    expect(text).toMatch(
      /svc_http_requests_total\{method="POST",route="\/echo",status="200"\} [1-9]/,
    );
    expect(text).toContain('svc_outbox_backlog');
  });

  it('applies table and topic definitions idempotently', async () => {
    await applyDefinitions(p.rt); // second time: no error, nothing changed
    // ListTables pages at 100 names and other test files create tables too: page through all.
    const names: string[] = [];
    let start: string | undefined;
    do {
      const page = await p.rt.dynamo.client.send(
        new ListTablesCommand({ ExclusiveStartTableName: start }),
      );
      names.push(...(page.TableNames ?? []));
      start = page.LastEvaluatedTableName;
    } while (start);
    const ours = names.filter((t) => t.startsWith(p.rt.config.TABLE_PREFIX));
    expect(ours.sort()).toEqual(Object.values(p.rt.tables).sort());
    const ledger = await p.rt.dynamo.client.send(
      new DescribeTableCommand({ TableName: p.rt.tables.ledger }),
    );
    expect(ledger.Table?.GlobalSecondaryIndexes?.map((g) => g.IndexName).sort()).toEqual([
      'due',
      'gsi1',
      'gsi2',
      'gsi3',
      'pages',
    ]);
    const admin = p.rt.kafka.admin();
    await admin.connect();
    const meta = await admin.fetchTopicMetadata({ topics: [p.rt.topics.consentEvents] });
    await admin.disconnect();
    expect(meta.topics[0]?.partitions).toHaveLength(6);
  });
});
