import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  DynamoDBDocumentClient,
  TransactWriteCommand,
} from '@aws-sdk/lib-dynamodb';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { launchDynamo, waitDynamo } from '../../infra/local/dynamodb.js';
import { stackPaths } from '../../infra/local/paths.js';
import { freePort } from '../../infra/local/proc.js';

/**
 * `npm run chaos:store -- [--rounds=5] [--write-ms=3000]`: does DynamoDB Local keep the writes
 * it acknowledged when it is killed with SIGKILL? On a DynamoDB Local of its own (on disk, as
 * `npm start` runs it), 8 writers send conditional TransactWriteItems of 5 items; after
 * `write-ms` the JVM is killed, restarted on the same files, and every item of every
 * acknowledged transaction is read back. Prints, per round, how many transactions were
 * acknowledged and how many of those are gone. This measures the store, not the service: the
 * `dynamodb-restart` fault scenario can only balance its ledger if the store keeps what it
 * acknowledged. Exits 0 either way; the figures are the result.
 */
const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    rounds: { type: 'string', default: '5' },
    'write-ms': { type: 'string', default: '3000' },
  },
  strict: true,
});
const rounds = Number(values.rounds);
const writeMs = Number(values['write-ms']);

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-store-durability-'));
const jarsDir = stackPaths().jars.dynamodb;
const port = await freePort();
const endpoint = `http://127.0.0.1:${port}`;
const start = async () => {
  const p = launchDynamo({
    jarsDir,
    port,
    logFile: path.join(dir, 'dynamodb.log'),
    dbPath: path.join(dir, 'db'),
    cwd: dir,
  });
  await waitDynamo(p, endpoint, 60_000);
  return p;
};

const client = new DynamoDBClient({
  endpoint,
  region: 'local',
  credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  maxAttempts: 1,
});
const doc = DynamoDBDocumentClient.from(client);
let proc = await start();
await client.send(
  new CreateTableCommand({
    TableName: 'durability',
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
    KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
  }),
);

let lostTotal = 0;
let ackedTotal = 0;
for (let round = 1; round <= rounds; round++) {
  const acked: string[][] = [];
  let stop = false;
  const writers = Array.from({ length: 8 }, async () => {
    while (!stop) {
      const ids = Array.from({ length: 5 }, () => randomUUID());
      try {
        await doc.send(
          new TransactWriteCommand({
            ClientRequestToken: randomUUID(),
            TransactItems: ids.map((pk) => ({
              Put: {
                TableName: 'durability',
                Item: { pk, d: 'x'.repeat(500) },
                ConditionExpression: 'attribute_not_exists(pk)',
              },
            })),
          }),
        );
        acked.push(ids);
      } catch {
        // Refused or cut off by the kill: never acknowledged, so never counted.
      }
    }
  });
  await new Promise((r) => setTimeout(r, writeMs));
  process.kill(proc.pid, 'SIGKILL');
  await proc.exited;
  stop = true;
  await Promise.all(writers);
  proc = await start();
  let lost = 0;
  let partial = 0;
  for (const ids of acked) {
    const r = await doc.send(
      new BatchGetCommand({
        RequestItems: { durability: { Keys: ids.map((pk) => ({ pk })), ConsistentRead: true } },
      }),
    );
    const kept = r.Responses?.durability?.length ?? 0;
    if (kept < ids.length) lost++;
    if (kept > 0 && kept < ids.length) partial++;
  }
  lostTotal += lost;
  ackedTotal += acked.length;
  process.stdout.write(
    `round ${round}: ${acked.length} transactions acknowledged, ${lost} of them gone after SIGKILL and restart (${partial} only in part)\n`,
  );
}
process.stdout.write(
  `total: ${ackedTotal} acknowledged, ${lostTotal} gone (${((100 * lostTotal) / Math.max(1, ackedTotal)).toFixed(3)} %)\n`,
);
process.kill(proc.pid, 'SIGKILL');
await proc.exited;
client.destroy();
fs.rmSync(dir, { recursive: true, force: true });
process.exit(0);
