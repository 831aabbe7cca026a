import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { StackError } from './errors.js';
import { projectRoot } from './paths.js';
import { spawnJava, waitReady, type JavaProcess } from './proc.js';

/**
 * The only address DynamoDB Local listens on. It has no authentication at all, and on its own
 * it binds every interface (it has no host option), so it is started through a launcher that
 * binds it here before it opens its port.
 */
export const DYNAMO_HOST = '127.0.0.1';

const launcherSource = path.join(projectRoot, 'infra', 'local', 'java', 'LoopbackDynamoDB.java');

export interface DynamoOptions {
  jarsDir: string;
  /** On-disk folder, or undefined for an in-memory database (tests). */
  dbPath: string | undefined;
  logFile: string;
  port: number;
  cwd: string;
  /** The JVM runs on after this process ends (`spawnJava`); otherwise it stops with it. */
  outlive?: boolean;
}

/**
 * Compiles the launcher against the fetched jars once, into a folder beside them named by the
 * digest of its source and of the jars' pom (so an edit or a version bump compiles again).
 * javac is run as `java -m jdk.compiler/…`, which also works where only a runtime package is
 * installed (Debian's and Ubuntu's JRE packages carry the compiler module). Two starts racing
 * compile into folders of their own and the first rename wins.
 */
export function ensureDynamoLauncher(jarsDir: string): string {
  const source = fs.readFileSync(launcherSource);
  let jarsDigest = '';
  try {
    jarsDigest = fs.readFileSync(path.join(jarsDir, '.complete'), 'utf8').trim();
  } catch {
    /* jars placed by hand: the source alone names the build */
  }
  const digest = createHash('sha256').update(source).update(jarsDigest).digest('hex').slice(0, 16);
  // Beside the real jars folder, so stacks that link to the shared jars share the build too.
  const dir = path.join(path.dirname(fs.realpathSync(jarsDir)), 'dynamodb-launcher', digest);
  if (fs.existsSync(path.join(dir, 'LoopbackDynamoDB.class'))) return dir;
  const jars = fs
    .readdirSync(jarsDir)
    .filter((f) => f.endsWith('.jar'))
    .map((f) => path.join(jarsDir, f));
  const tmp = `${dir}.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
  fs.mkdirSync(tmp, { recursive: true });
  try {
    const r = spawnSync(
      'java',
      [
        '-m',
        'jdk.compiler/com.sun.tools.javac.Main',
        '--release',
        '17',
        '-proc:none',
        '-d',
        tmp,
        '-cp',
        jars.join(path.delimiter),
        launcherSource,
      ],
      { encoding: 'utf8' },
    );
    if (r.status !== 0) {
      const out = `${r.stderr ?? ''}\n${r.stdout ?? ''}`.trim().split('\n').slice(0, 3).join(' | ');
      throw new StackError(
        `could not compile the DynamoDB Local launcher (${r.error?.message ?? out.slice(0, 300)}); it needs Java 17+ with the jdk.compiler module (e.g. apt-get install openjdk-17-jdk-headless)`,
      );
    }
    try {
      fs.renameSync(tmp, dir);
    } catch (err) {
      // Another start finished first; its build is the same.
      if (!fs.existsSync(path.join(dir, 'LoopbackDynamoDB.class'))) throw err;
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  return dir;
}

/** DynamoDB Local's database file in `dbPath` (with `-sharedDb`, one for every client). */
export const dynamoDbFile = (dbPath: string) => path.join(dbPath, 'shared-local-instance.db');

/** Whether an SQLite file's header says write-ahead-log mode (bytes 18 and 19 are 2; 1 without). */
export function inWalMode(file: string): boolean {
  const b = Buffer.alloc(20);
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch {
    return false; // not there yet
  }
  try {
    return fs.readSync(fd, b, 0, 20, 0) === 20 && b[18] === 2 && b[19] === 2;
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Puts DynamoDB Local's SQLite file in write-ahead-log mode before it is opened (the launcher's
 * `--wal`, in a JVM of its own, only when the file is not in that mode already): DynamoDB Local
 * leaves SQLite in rollback-journal mode, where each write it commits costs four syncs to disk;
 * in WAL mode one, with the same durability (a commit is synced before it is acknowledged).
 * Appends what it did to the log file; a failure leaves the file as it was (slower, as durable)
 * and says so there.
 */
function writeAheadLog(o: DynamoOptions, java: string[]): void {
  if (!o.dbPath) return;
  fs.mkdirSync(path.dirname(o.logFile), { recursive: true });
  const file = dynamoDbFile(o.dbPath);
  if (inWalMode(file)) {
    fs.appendFileSync(o.logFile, 'SQLite journal mode: wal (already)\n');
    return;
  }
  const r = spawnSync('java', [...java, '--wal', file], { encoding: 'utf8', timeout: 60_000 });
  const said = `${r.stdout ?? ''}${r.stderr ?? ''}`.trim().split('\n');
  const line =
    r.status === 0
      ? (said.find((l) => l.startsWith('SQLite journal mode:')) ?? 'SQLite journal mode: ?')
      : `SQLite journal mode not set (exit ${r.status ?? r.error?.message}): ${said.slice(-2).join(' | ')}`;
  fs.appendFileSync(o.logFile, `${line}\n`);
}

export function launchDynamo(o: DynamoOptions): JavaProcess {
  if (o.dbPath) fs.mkdirSync(o.dbPath, { recursive: true });
  const launcher = ensureDynamoLauncher(o.jarsDir);
  // The launcher's JVM options and class, for both of its uses.
  const java = [
    `-Djava.library.path=${o.jarsDir}`,
    '-cp',
    [launcher, `${o.jarsDir}/*`].join(path.delimiter),
    'LoopbackDynamoDB',
  ];
  writeAheadLog(o, java);
  const args = [
    '-Xmx512m',
    '-Xms64m',
    `-Dsvc.dynamodb.host=${DYNAMO_HOST}`,
    ...java,
    '-port',
    String(o.port),
    '-sharedDb',
    '-disableTelemetry',
    ...(o.dbPath ? ['-dbPath', o.dbPath] : ['-inMemory']),
  ];
  return spawnJava(args, o.logFile, o.cwd, o.outlive);
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
  signal?: AbortSignal,
) {
  // With a process of ours, ready means it printed that it listens on the port (the launcher
  // does once bound): another process holding the port would answer the probe as well.
  const port = new URL(endpoint).port;
  const bound = () =>
    !proc ||
    readFrom(proc.logFile, proc.logStart).includes(`Listening on ${DYNAMO_HOST}:${port}\n`);
  await waitReady(
    'DynamoDB Local',
    proc,
    async () => bound() && (await dynamoReady(endpoint)),
    timeoutMs,
    signal,
  );
}

/** What `file` holds from byte `offset` on; empty when it cannot be read. */
function readFrom(file: string, offset: number): string {
  try {
    return fs.readFileSync(file).subarray(offset).toString('utf8');
  } catch {
    return '';
  }
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
