import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { createPostbackService } from '../../services/postback/index.js';
import { createKafka } from '../../shared/bus/kafka.js';
import { Producer } from '../../shared/bus/producer.js';
import { POSTBACK_PATH } from '../../shared/domain/consent/events.js';
import { closeServer, createHttpApp, finishHttpApp, listen } from '../../shared/http/server.js';
import { Outbox } from '../../shared/storage/outbox/outbox.js';
import type { Runtime } from '../../shared/runtime.js';
import { collectTopic } from '../helpers/kafka.js';
import { testRuntime } from '../helpers/stack.js';
import { ENCRYPTION_KEY, postbackApp, storeDispatch } from './fixture.js';
import { gunzipSync } from 'node:zlib';

let rt: Runtime;
let deadProducer: Producer;
let server: Server;
let url: string;
let downOutbox: Outbox;

/**
 * The service on a runtime whose producer points at a closed port ("Kafka is down"): the
 * postback must still be accepted, kept in the outbox, and reach Kafka through the relay.
 */
beforeAll(async () => {
  rt = await testRuntime('postback-down', { SVC_ENCRYPTION_KEY: ENCRYPTION_KEY });
  deadProducer = new Producer(createKafka(rt.config, ['127.0.0.1:1'], rt.log), rt.log, {
    retries: 1,
  });
  downOutbox = new Outbox({
    doc: rt.dynamo.doc,
    table: rt.tables.outbox,
    producer: deadProducer,
    log: rt.log,
    registry: rt.registry,
  });
  const down: Runtime = { ...rt, outbox: downOutbox };
  const app = createHttpApp({
    log: rt.log,
    registry: rt.registry,
    bodyLimitBytes: rt.config.BODY_LIMIT_BYTES,
    readiness: {},
  });
  await createPostbackService().mount(app, down);
  finishHttpApp(app, rt.log);
  server = await listen(app, 0, '127.0.0.1');
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  if (server) await closeServer(server);
  await deadProducer?.close().catch(() => undefined);
  await rt?.close();
});

it('accepts a postback while Kafka is down and delivers it through the outbox relay', async () => {
  const { app, secretKey } = await postbackApp(rt);
  const d = await storeDispatch(rt, app.appId, 'data.deleted');
  const res = await fetch(`${url}${POSTBACK_PATH}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-secret-key': secretKey },
    body: JSON.stringify({
      dispatchId: d.dispatchId,
      referenceId: d.referenceId,
      status: 'deleted',
      completedAt: '2026-01-02T03:04:05.678Z',
      risk: 'none',
    }),
  });
  const receipt = (await res.json()) as { postbackId: string };
  expect(res.status).toBe(202);

  const kept = await rt.dynamo.doc.send(
    new GetCommand({ TableName: rt.tables.outbox, Key: { id: receipt.postbackId } }),
  );
  const packed = JSON.parse(
    gunzipSync(kept.Item?.packed as Uint8Array).toString('utf8'),
  ) as unknown;
  expect(packed).toMatchObject([{ topic: rt.topics.postbacks, key: d.dispatchId }]);

  const topic = await collectTopic(rt.kafka, rt.topics.postbacks);
  try {
    // The process that took it dies while Kafka is down; the relay of another process (here
    // one pass, with a working producer) publishes it from the stopped writer's watermark.
    downOutbox.abandon();
    expect(await rt.relay.relayOnce({ staleMs: 0 })).toBeGreaterThanOrEqual(1);
    await vi.waitFor(
      () =>
        expect(
          topic.messages.map((m) => [m.key, (m.value as { postbackId: string }).postbackId]),
        ).toEqual([[d.dispatchId, receipt.postbackId]]),
      { timeout: 10_000 },
    );
  } finally {
    await topic.stop();
  }
});
