import { ListTablesCommand } from '@aws-sdk/client-dynamodb';
import net from 'node:net';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { createDynamo } from '../../shared/storage/dynamo.js';
import { StoreOutages } from '../../shared/storage/outages.js';

/**
 * The outage watch on a real DynamoDB client, in front of DynamoDB Local through a TCP relay
 * this test opens and closes: closed, the client's requests are refused (an outage opens);
 * open again, the first answer closes it and the listener hears when it began.
 */
const target = new URL(inject('dynamoEndpoint'));
let server: net.Server | undefined;
const sockets = new Set<net.Socket>();
/** While set, new connections are held open and never forwarded. */
let stalled = false;

function openRelay(port = 0): Promise<number> {
  server = net.createServer((c) => {
    sockets.add(c);
    if (stalled) return;
    const up = net.connect(Number(target.port), target.hostname);
    sockets.add(c).add(up);
    c.pipe(up).pipe(c);
    const end = () => {
      c.destroy();
      up.destroy();
    };
    c.on('error', end).on('close', end);
    up.on('error', end).on('close', end);
  });
  return new Promise((resolve) =>
    server!.listen(port, '127.0.0.1', () => resolve((server!.address() as net.AddressInfo).port)),
  );
}

async function closeRelay(): Promise<void> {
  for (const s of sockets) s.destroy();
  sockets.clear();
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  server = undefined;
}

afterAll(closeRelay);

describe('store outage watch', () => {
  it('opens on a refused request and tells listeners when it began, on the next answer', async () => {
    const port = await openRelay();
    const dynamo = createDynamo({
      DYNAMODB_ENDPOINT: `http://127.0.0.1:${port}`,
      DYNAMODB_REQUEST_TIMEOUT_MS: 1_000,
    });
    const outages = new StoreOutages();
    outages.watch(dynamo.client);
    const heard: number[] = [];
    const lost: boolean[] = [];
    outages.onRecovered((since, l) => {
      heard.push(since);
      lost.push(l);
    });
    try {
      await dynamo.client.send(new ListTablesCommand({ Limit: 1 }));
      expect(outages.open).toBe(false);

      await closeRelay();
      const before = Date.now();
      await expect(dynamo.client.send(new ListTablesCommand({ Limit: 1 }))).rejects.toThrow();
      expect(outages.open).toBe(true);
      expect(heard).toEqual([]);

      await openRelay(port);
      await dynamo.client.send(new ListTablesCommand({ Limit: 1 }));
      expect(outages.open).toBe(false);
      expect(heard).toHaveLength(1);
      expect(heard[0]).toBeGreaterThanOrEqual(before);
      expect(heard[0]).toBeLessThanOrEqual(Date.now());
      // Refused connections: the store went away (and may have lost what it acknowledged).
      expect(lost).toEqual([true]);

      // A store that takes the connection but does not answer (stalled): an outage, not lost.
      stalled = true;
      for (const sock of sockets) sock.destroy();
      sockets.clear();
      // The client notices its pooled connections closed before it sends again.
      await new Promise((r) => setImmediate(r));
      await expect(dynamo.client.send(new ListTablesCommand({ Limit: 1 }))).rejects.toThrow();
      expect(outages.open).toBe(true);
      stalled = false;
      await dynamo.client.send(new ListTablesCommand({ Limit: 1 }));
      expect(lost).toEqual([true, false]);
    } finally {
      dynamo.close();
    }
  });

  it('is not opened by a request the store refuses as invalid', async () => {
    const dynamo = createDynamo({ DYNAMODB_ENDPOINT: inject('dynamoEndpoint') });
    const outages = new StoreOutages();
    outages.watch(dynamo.client);
    try {
      await expect(dynamo.client.send(new ListTablesCommand({ Limit: 0 }))).rejects.toThrow();
      expect(outages.open).toBe(false);
    } finally {
      dynamo.close();
    }
  });
});
