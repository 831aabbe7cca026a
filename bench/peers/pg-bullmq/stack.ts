import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../../infra/local/proc.js';

/**
 * Starts the peer of `npm run bench -- e2e` on free loopback ports in a folder of its own:
 * PostgreSQL 15 (Debian package `postgresql`; fsync and synchronous_commit on, as shipped),
 * Redis 7 (`redis-server`; appendonly, appendfsync everysec) and the peer service process.
 * PostgreSQL refuses to run as root, so as root it runs as the `postgres` user the package made.
 */

const PG_BIN = '/usr/lib/postgresql/15/bin';
const here = path.dirname(fileURLToPath(import.meta.url));

export interface Peer {
  url: string;
  apiKey: string;
  /** The webhook signing secret, Standard Webhooks form (`whsec_…`). */
  secret: string;
  pid: number;
  /** PostgreSQL (postmaster and its backends) and Redis, for their CPU. */
  backing(): Map<string, number[]>;
  stop(): Promise<void>;
}

/** The pid and its direct children (PostgreSQL's backends), from /proc. */
function withChildren(pid: number): number[] {
  const out = [pid];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const f = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      if (Number(f.slice(f.lastIndexOf(')') + 2).split(' ')[1]) === pid) out.push(Number(d));
    } catch {
      /* gone */
    }
  }
  return out;
}

export function peerMissing(): string | undefined {
  if (!fs.existsSync(`${PG_BIN}/initdb`)) return 'postgresql';
  if (spawnSync('sh', ['-c', 'command -v redis-server'], { stdio: 'ignore' }).status !== 0)
    return 'redis-server';
  return undefined;
}

function run(cmd: string, args: string[], asPostgres: boolean): void {
  const full = asPostgres ? ['runuser', '-u', 'postgres', '--', cmd, ...args] : [cmd, ...args];
  const r = spawnSync(full[0]!, full.slice(1), { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${full.join(' ')} failed: ${r.stderr || r.stdout}`);
}

async function waitFor(what: string, ok: () => boolean, ms = 30_000): Promise<void> {
  const until = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > until) throw new Error(`${what} did not start within ${ms / 1000} s`);
    await delay(200);
  }
}

export async function startPeer(o: {
  webhookUrl: string;
  log: (m: string) => void;
}): Promise<Peer> {
  const missing = peerMissing();
  if (missing) throw new Error(`the peer needs ${missing}: apt-get install -y ${missing}`);
  const root = process.getuid?.() === 0;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-peer-'));
  fs.chmodSync(dir, 0o777);
  const pgData = path.join(dir, 'pg');
  const [pgPort, redisPort, port] = [await freePort(), await freePort(), await freePort()];
  run(`${PG_BIN}/initdb`, ['-D', pgData, '-U', 'peer', '--auth=trust', '-E', 'UTF8'], root);
  const pgLog = path.join(dir, 'pg.log');
  run(
    `${PG_BIN}/pg_ctl`,
    [
      '-D',
      pgData,
      '-l',
      pgLog,
      '-o',
      `-p ${pgPort} -k ${dir} -c listen_addresses=127.0.0.1`,
      '-w',
      'start',
    ],
    root,
  );
  const children: ChildProcess[] = [];
  const redis = spawn(
    'redis-server',
    [
      '--port',
      String(redisPort),
      '--bind',
      '127.0.0.1',
      '--dir',
      dir,
      '--appendonly',
      'yes',
      '--appendfsync',
      'everysec',
      '--save',
      '',
      '--maxmemory-policy',
      'noeviction',
    ],
    { stdio: 'ignore' },
  );
  children.push(redis);
  const apiKey = `peer_${randomBytes(16).toString('hex')}`;
  const secret = `whsec_${randomBytes(24).toString('base64')}`;
  const logFile = fs.openSync(path.join(dir, 'peer.log'), 'a');
  const server = spawn(process.execPath, ['--import', 'tsx', path.join(here, 'server.ts')], {
    stdio: ['ignore', logFile, logFile],
    env: {
      ...process.env,
      PORT: String(port),
      PG_URL: `postgres://peer@127.0.0.1:${pgPort}/postgres`,
      REDIS_PORT: String(redisPort),
      PEER_API_KEY: apiKey,
      PEER_WEBHOOK_URL: o.webhookUrl,
      PEER_SECRET: secret,
    },
  });
  children.push(server);
  const logText = () => fs.readFileSync(path.join(dir, 'peer.log'), 'utf8');
  await waitFor('the peer', () => {
    if (server.exitCode !== null) throw new Error(`the peer exited: ${logText()}`);
    return logText().includes('peer ready');
  });
  o.log(`peer: PostgreSQL on ${pgPort}, Redis on ${redisPort}, service on ${port} (${dir})`);
  return {
    url: `http://127.0.0.1:${port}`,
    apiKey,
    secret,
    pid: server.pid!,
    backing: () => {
      const postmaster = Number(
        fs.readFileSync(path.join(pgData, 'postmaster.pid'), 'utf8').split('\n')[0],
      );
      return new Map([
        ['PostgreSQL', withChildren(postmaster)],
        ['Redis', [redis.pid!]],
      ]);
    },
    stop: async () => {
      server.kill('SIGTERM');
      await Promise.race([new Promise((r) => server.once('exit', r)), delay(10_000)]);
      for (const c of children) c.kill('SIGKILL');
      try {
        run(`${PG_BIN}/pg_ctl`, ['-D', pgData, '-m', 'immediate', 'stop'], root);
      } catch {
        /* already gone */
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
