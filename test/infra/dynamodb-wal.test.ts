import { DynamoDBClient, CreateTableCommand } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { dynamoDbFile, inWalMode, launchDynamo, waitDynamo } from '../../infra/local/dynamodb.js';
import { stackPaths } from '../../infra/local/paths.js';
import { freePort, stopPid, type JavaProcess } from '../../infra/local/proc.js';

/**
 * The embedded DynamoDB Local keeps its SQLite file in write-ahead-log mode (the launcher sets it
 * before DynamoDB Local opens the file): one sync to disk a commit instead of four, and a write
 * it acknowledged is still there after the JVM is killed with SIGKILL.
 */

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-ddb-wal-'));
const DB = dynamoDbFile(tmp);
const started: JavaProcess[] = [];

afterAll(async () => {
  for (const p of started) await stopPid(p.pid).catch(() => undefined);
  fs.rmSync(tmp, { recursive: true, force: true });
});

async function start(): Promise<{ proc: JavaProcess; doc: DynamoDBDocumentClient }> {
  const port = await freePort();
  const proc = launchDynamo({
    jarsDir: stackPaths().jars.dynamodb,
    dbPath: tmp,
    logFile: path.join(tmp, `dynamodb-${started.length}.log`),
    port,
    cwd: tmp,
  });
  started.push(proc);
  const endpoint = `http://127.0.0.1:${port}`;
  await waitDynamo(proc, endpoint, 60_000);
  const client = new DynamoDBClient({
    endpoint,
    region: 'local',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  return { proc, doc: DynamoDBDocumentClient.from(client) };
}

/** SQLite's file header: WAL mode, and the page size (bytes 16–17). */
function header(): { wal: boolean; pageSize: number } {
  const b = Buffer.alloc(18);
  const fd = fs.openSync(DB, 'r');
  try {
    fs.readSync(fd, b, 0, 18, 0);
  } finally {
    fs.closeSync(fd);
  }
  return { wal: inWalMode(DB), pageSize: b.readUInt16BE(16) };
}

describe('embedded DynamoDB Local on disk', () => {
  it('keeps its database in WAL mode with 4 KB pages, and a write acknowledged before a SIGKILL is there after the restart', async () => {
    const first = await start();
    expect(fs.readFileSync(path.join(tmp, 'dynamodb-0.log'), 'utf8')).toContain(
      'SQLite journal mode: wal (new database)',
    );
    await first.doc.send(
      new CreateTableCommand({
        TableName: 'wal',
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
        AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
        BillingMode: 'PAY_PER_REQUEST',
      }),
    );
    for (let i = 0; i < 50; i++)
      await first.doc.send(new PutCommand({ TableName: 'wal', Item: { pk: `k${i}`, n: i } }));
    expect(header()).toEqual({ wal: true, pageSize: 4096 });
    expect(fs.existsSync(`${DB}-wal`)).toBe(true);

    process.kill(first.proc.pid, 'SIGKILL');
    await new Promise((r) => setTimeout(r, 500));
    const second = await start();
    expect(fs.readFileSync(path.join(tmp, 'dynamodb-1.log'), 'utf8')).toContain(
      'SQLite journal mode: wal',
    );
    for (const i of [0, 25, 49]) {
      const r = await second.doc.send(
        new GetCommand({ TableName: 'wal', Key: { pk: `k${i}` }, ConsistentRead: true }),
      );
      expect(r.Item).toEqual({ pk: `k${i}`, n: i });
    }
    expect(header().wal).toBe(true);
  });
});
