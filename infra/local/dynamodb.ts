import fs from 'node:fs';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { spawnJava, waitReady, type JavaProcess } from './proc.js';

export interface DynamoOptions {
  jarsDir: string;
  /** On-disk folder, or undefined for an in-memory database (tests). */
  dbPath: string | undefined;
  logFile: string;
  port: number;
  cwd: string;
}

export function launchDynamo(o: DynamoOptions): JavaProcess {
  if (o.dbPath) fs.mkdirSync(o.dbPath, { recursive: true });
  const args = [
    '-Xmx512m',
    '-Xms64m',
    `-Djava.library.path=${o.jarsDir}`,
    '-cp',
    `${o.jarsDir}/*`,
    'software.amazon.dynamodb.services.local.main.ServerRunner',
    '-port',
    String(o.port),
    '-sharedDb',
    '-disableTelemetry',
    ...(o.dbPath ? ['-dbPath', o.dbPath] : ['-inMemory']),
  ];
  return spawnJava(args, o.logFile, o.cwd);
}

export async function dynamoReady(endpoint: string): Promise<boolean> {
  const client = new DynamoDBClient({
    endpoint,
    region: 'local',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  });
  try {
    await client.send(new ListTablesCommand({ Limit: 1 }));
    return true;
  } catch {
    return false;
  } finally {
    client.destroy();
  }
}

export async function waitDynamo(
  proc: JavaProcess | undefined,
  endpoint: string,
  timeoutMs: number,
) {
  await waitReady('DynamoDB Local', proc, () => dynamoReady(endpoint), timeoutMs);
}

/** The version DynamoDB Local printed at start ("Version:\t3.3.1"). */
export function dynamoVersion(logFile: string): string | undefined {
  try {
    const m = [...fs.readFileSync(logFile, 'utf8').matchAll(/^Version:\s+(\S+)/gm)].at(-1);
    return m?.[1];
  } catch {
    return undefined;
  }
}
