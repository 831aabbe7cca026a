import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { Webhook } from 'standardwebhooks';
import { projectRoot, stackPaths } from '../../infra/local/paths.js';
import { freePort, isAlive } from '../../infra/local/proc.js';
import { readPid, upStack, type StackHandle } from '../../infra/local/stack.js';
import { spawnEnv } from '../helpers/tuning.js';

/**
 * The fault suite's parts, all real: a Kafka and a DynamoDB Local of its own (persistent, so
 * they can be killed and restarted), the service as separate Node processes started the way a
 * user starts them (`bin/start.ts`, with the fixed values a scenario gives), a webhook
 * receiver that checks every signature with the Standard Webhooks library, and a load
 * generator speaking REST.
 */

export type Log = (msg: string) => void;

/** Kafka and DynamoDB Local in a folder of their own, on fixed ports so restarts find them. */
export class ChaosStack {
  private handle: StackHandle | undefined;
  private constructor(
    readonly dir: string,
    readonly ports: { kafka: number; controller: number; dynamo: number },
    private readonly log: Log,
  ) {}

  static async create(log: Log): Promise<ChaosStack> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-chaos-'));
    // Jars are shared with the project's own cache; data, pids and logs are this run's.
    const paths = stackPaths(dir);
    const jars = stackPaths().jars;
    fs.mkdirSync(path.dirname(paths.jars.kafka), { recursive: true });
    fs.symlinkSync(jars.kafka, paths.jars.kafka);
    fs.symlinkSync(jars.dynamodb, paths.jars.dynamodb);
    const s = new ChaosStack(
      dir,
      { kafka: await freePort(), controller: await freePort(), dynamo: await freePort() },
      log,
    );
    await s.up();
    return s;
  }

  /** Starts whatever is not running (both at first; after a kill, the killed one). */
  async up(): Promise<void> {
    const h = await upStack({
      mode: 'persistent',
      paths: stackPaths(this.dir),
      kafkaPort: this.ports.kafka,
      kafkaControllerPort: this.ports.controller,
      dynamoPort: this.ports.dynamo,
      readyTimeoutMs: 120_000,
      log: (m) => this.log(`[stack] ${m}`),
    });
    // Keep the first handle's stop duty for what it started; a restart adds its own.
    this.handles.push(h);
    this.handle ??= h;
  }

  private readonly handles: StackHandle[] = [];

  get brokers(): string {
    return `127.0.0.1:${this.ports.kafka}`;
  }
  get dynamoEndpoint(): string {
    return `http://127.0.0.1:${this.ports.dynamo}`;
  }

  pid(name: 'kafka' | 'dynamodb'): number {
    const rec = readPid(stackPaths(this.dir).run, name);
    if (!rec) throw new Error(`${name} is not running`);
    return rec.pid;
  }

  /** Sends a signal to the JVM's whole process group (it was started detached). */
  signal(name: 'kafka' | 'dynamodb', sig: NodeJS.Signals): void {
    const pid = this.pid(name);
    try {
      process.kill(-pid, sig);
    } catch {
      process.kill(pid, sig);
    }
  }

  async kill(name: 'kafka' | 'dynamodb'): Promise<void> {
    const pid = this.pid(name);
    this.signal(name, 'SIGKILL');
    for (let i = 0; i < 100 && isAlive(pid); i++) await delay(100);
  }

  async stop(): Promise<void> {
    for (const name of ['kafka', 'dynamodb'] as const) {
      try {
        this.signal(name, 'SIGCONT');
      } catch {
        /* not running */
      }
    }
    for (const h of this.handles.reverse()) await h.stop().catch(() => undefined);
    for (const name of ['kafka', 'dynamodb'] as const) {
      try {
        this.signal(name, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

export interface AppOptions {
  role: 'all' | 'ingress' | 'workers';
  name: string;
  stack: ChaosStack;
  prefix: string;
  adminToken: string;
  logDir: string;
  /** Settings, and fixed values (shared/tuning.ts) the process gets in code. */
  env?: Record<string, string>;
  /** Extra options for node (e.g. --cpu-prof). */
  nodeArgs?: string[];
}

/**
 * One service process, started as a user would (`bin/start.ts`, through test/helpers/
 * start-tuned.ts for the fixed values a scenario gives), with its log in a file.
 */
export class AppProcess {
  child: ChildProcess | undefined;
  port = 0;
  constructor(readonly o: AppOptions) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  private logStart = 0;

  private logText(): string {
    try {
      return fs.readFileSync(path.join(this.o.logDir, `${this.o.name}.log`), 'utf8');
    } catch {
      return '';
    }
  }

  async start(): Promise<void> {
    this.port ||= await freePort();
    this.logStart = this.logText().length;
    const out = fs.openSync(path.join(this.o.logDir, `${this.o.name}.log`), 'a');
    this.child = spawn(
      process.execPath,
      [
        ...(this.o.nodeArgs ?? []),
        '--import',
        'tsx',
        path.join(projectRoot, 'test', 'helpers', 'start-tuned.ts'),
        `--role=${this.o.role}`,
      ],
      {
        cwd: projectRoot,
        stdio: ['ignore', out, out],
        env: {
          ...process.env,
          ...spawnEnv({
            NODE_ENV: 'development',
            LOG_LEVEL: process.env.CHAOS_LOG_LEVEL ?? 'warn',
            PORT: String(this.port),
            HOST: '127.0.0.1',
            KAFKA_BROKERS: this.o.stack.brokers,
            DYNAMODB_ENDPOINT: this.o.stack.dynamoEndpoint,
            TOPIC_PREFIX: `${this.o.prefix}.`,
            TABLE_PREFIX: `${this.o.prefix}_`,
            SVC_ADMIN_TOKEN: this.o.adminToken,
            SVC_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
            WEBHOOK_ALLOW_LOOPBACK_SANDBOX: 'true',
            RATE_LIMIT_RPS: '100000',
            RATE_LIMIT_BURST: '100000',
            SVC_HOME: this.o.logDir,
            ...this.o.env,
          }),
        },
      },
    );
    fs.closeSync(out);
    const child = this.child;
    child.once('exit', (code, signal) => {
      if (!this.expectedExit.has(child))
        fs.appendFileSync(
          path.join(this.o.logDir, `${this.o.name}.log`),
          `\n[chaos] process exited unexpectedly: code ${code}, signal ${signal}\n`,
        );
    });
    const deadline = Date.now() + 120_000;
    while (Date.now() < deadline) {
      if (this.child.exitCode !== null)
        throw new Error(`${this.o.name} exited with ${this.child.exitCode}; see its log`);
      // Ready once every worker started too (the HTTP side answers before that): the line
      // `main` prints last.
      if (this.logText().slice(this.logStart).includes(' ready at http')) return;
      await delay(200);
    }
    throw new Error(`${this.o.name} did not start within 120 s`);
  }

  /** Exits the harness caused (kills, stops), not reported as unexpected. */
  private readonly expectedExit = new WeakSet<ChildProcess>();

  kill9(): void {
    if (this.child) this.expectedExit.add(this.child);
    this.child?.kill('SIGKILL');
  }

  async stop(): Promise<void> {
    const c = this.child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    this.expectedExit.add(c);
    const exited = new Promise((r) => c.once('exit', r));
    c.kill('SIGTERM');
    await Promise.race([exited, delay(30_000)]);
    if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  }

  /** The sum of a metric's samples whose labels contain `labels`, from the process's /metrics. */
  async metric(name: string, labels = ''): Promise<number> {
    const text = await (await fetch(`${this.url}/metrics`)).text();
    let sum = 0;
    for (const m of text.matchAll(new RegExp(`^${name}(\\{[^}]*\\})? (\\S+)$`, 'gm')))
      if ((m[1] ?? '').includes(labels)) sum += Number(m[2]);
    return sum;
  }

  /**
   * Writes a V8 heap snapshot of the process to `file` (it must run with
   * `--heapsnapshot-signal=SIGUSR2 --diagnostic-dir=<dir>`): signals it and waits until the
   * new `.heapsnapshot` in that folder is complete, then renames it.
   */
  async heapSnapshot(dir: string, file: string): Promise<void> {
    const before = new Set(fs.readdirSync(dir));
    this.child?.kill('SIGUSR2');
    const deadline = Date.now() + 300_000;
    while (Date.now() < deadline) {
      await delay(1_000);
      const made = fs.readdirSync(dir).find((f) => f.endsWith('.heapsnapshot') && !before.has(f));
      if (!made) continue;
      // V8 writes the file in one go; complete once its size stops changing and the JSON closes.
      const full = path.join(dir, made);
      const size = fs.statSync(full).size;
      await delay(2_000);
      if (fs.statSync(full).size !== size) continue;
      const fd = fs.openSync(full, 'r');
      const tail = Buffer.alloc(16);
      fs.readSync(fd, tail, 0, 16, Math.max(0, size - 16));
      fs.closeSync(fd);
      if (!tail.toString().trimEnd().endsWith('}')) continue;
      fs.renameSync(full, path.join(dir, file));
      return;
    }
    throw new Error(`${this.o.name}: no heap snapshot within 300 s`);
  }

  /** Resident set size, read by the kernel (/proc), without asking the busy process. */
  rss(): number {
    try {
      const status = fs.readFileSync(`/proc/${this.child?.pid}/status`, 'utf8');
      return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? NaN) * 1024;
    } catch {
      return NaN;
    }
  }

  /** V8 heap in use, from the process's own /metrics (NaN when it does not answer). */
  async heapUsed(): Promise<number> {
    const text = await fetch(`${this.url}/metrics`, { signal: AbortSignal.timeout(5_000) })
      .then((r) => r.text())
      .catch(() => '');
    return Number(
      /^svc_process_nodejs_heap_size_used_bytes(?:\{[^}]*\})? (\S+)/m.exec(text)?.[1] ?? NaN,
    );
  }
}

export interface Delivery {
  webhookId: string;
  type: string;
  referenceId: string;
  userId: string | null;
  status: number;
  /** When it arrived (ms since the epoch). */
  at: number;
  /** The attempt number the dispatcher sent (`x-svc-attempt`). */
  attempt: number;
  /** The body's SHA-256: every copy of one webhook-id must carry the same body (and sequence). */
  bodySha: string;
}

/**
 * The apps' webhook receiver: checks every request's signature with the Standard Webhooks
 * library and records what arrived. `failing` endpoints answer 503.
 */
export class Receiver {
  readonly deliveries: Delivery[] = [];
  readonly badSignatures: string[] = [];
  private server: http.Server | undefined;
  private readonly verifiers = new Map<string, Webhook>();
  readonly failing = new Set<string>();
  port = 0;

  /** The endpoint's signing secret: the service's (used as raw bytes) or a `whsec_…` one. */
  setSecret(endpoint: string, secret: string): void {
    this.verifiers.set(
      endpoint,
      secret.startsWith('whsec_')
        ? new Webhook(secret)
        : new Webhook(Buffer.from(secret), { format: 'raw' }),
    );
  }

  url(endpoint: string): string {
    return `http://127.0.0.1:${this.port}/hook/${endpoint}`;
  }

  async start(): Promise<void> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const endpoint = (req.url ?? '').split('/')[2] ?? '';
        const body = Buffer.concat(chunks).toString('utf8');
        const headers = Object.fromEntries(
          Object.entries(req.headers).map(([k, v]) => [k, String(v)]),
        );
        const verifier = this.verifiers.get(endpoint);
        let event: { type: string; data: { referenceId: string; userId: string | null } };
        try {
          if (!verifier) throw new Error('unknown endpoint');
          event = verifier.verify(body, headers) as typeof event;
        } catch {
          this.badSignatures.push(headers['webhook-id'] ?? '?');
          res.writeHead(400).end();
          return;
        }
        const status = this.failing.has(endpoint) ? 503 : 200;
        this.deliveries.push({
          webhookId: headers['webhook-id'] ?? '',
          type: event.type,
          referenceId: event.data.referenceId,
          userId: event.data.userId,
          status,
          at: Date.now(),
          attempt: Number(headers['x-svc-attempt'] ?? 0),
          bodySha: createHash('sha256').update(body).digest('hex'),
        });
        res.writeHead(status, { 'content-type': 'application/json' }).end('{"ok":true}');
      });
    });
    this.server.keepAliveTimeout = 30_000;
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', () => r()));
    const a = this.server.address();
    this.port = typeof a === 'object' && a ? a.port : 0;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((r) => this.server?.close(r));
  }
}

export interface Tenant {
  appId: string;
  endpoint: string;
  secretKey: string;
  apiKey: string;
}

/** A read that a busy or recovering service answered 503 (or not at all) is asked again. */
async function readJson(
  url: string,
  token: string,
): Promise<{ status: number; body: Record<string, unknown> }> {
  for (let i = 0; ; i++) {
    const r = await json(url, { method: 'GET', token }).catch(() => undefined);
    if ((r && r.status < 500) || i >= 30) return r ?? { status: 0, body: {} };
    await delay(1_000);
  }
}

async function json(
  url: string,
  init: { method: string; token: string; body?: unknown },
): Promise<{ status: number; body: Record<string, unknown> }> {
  const r = await fetch(url, {
    method: init.method,
    headers: { authorization: `Bearer ${init.token}`, 'content-type': 'application/json' },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await r.text();
  return { status: r.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

/** A sandbox app whose webhooks go to the receiver, with an API key for consents and the ledger. */
export async function createTenant(
  baseUrl: string,
  adminToken: string,
  receiver: Receiver,
  endpoint: string,
): Promise<Tenant> {
  const created = await json(`${baseUrl}/api/v1/admin/apps`, {
    method: 'POST',
    token: adminToken,
    body: {
      name: `chaos ${endpoint}`,
      environment: 'sandbox',
      webhookUrl: receiver.url(endpoint),
      allowedOrigins: ['http://localhost:3000'],
      contactEmail: 'ops@example.com',
    },
  });
  if (created.status !== 201) throw new Error(`create app: ${JSON.stringify(created)}`);
  const app = created.body.app as { appId?: string; id?: string };
  const appId = String(app.appId ?? app.id);
  const secretKey = String(created.body.secretKey);
  receiver.setSecret(endpoint, secretKey);
  const key = await json(`${baseUrl}/api/v1/admin/apps/${appId}/api-keys`, {
    method: 'POST',
    token: adminToken,
    body: { name: 'chaos', scopes: ['consents:read', 'consents:write', 'ledger:read'] },
  });
  if (key.status !== 201) throw new Error(`create api key: ${JSON.stringify(key)}`);
  return { appId, endpoint, secretKey, apiKey: String(key.body.key) };
}

export interface Accepted {
  userId: string;
  referenceId: string;
  tenant: Tenant;
}

export interface LoadResult {
  accepted: Accepted[];
  /** Answers by status ("201", "503", …; "none" = no answer within 5 s or connection failed). */
  answers: Record<string, number>;
  /**
   * Answers slower than `slowMs` (2 s unless set): when each of their requests was sent (epoch
   * ms), to place them against a fault.
   */
  slow: number[];
}

/**
 * POSTs consents at `rate` per second for `durationMs`, spread over the tenants, against the
 * ingress URLs given by `targets()` (read at each request, so a restarted process is found).
 * A consent counts as accepted only when answered 201.
 */
export async function postConsents(o: {
  targets: () => string[];
  tenants: Tenant[];
  rate: number;
  durationMs: number;
  runId: string;
  result?: LoadResult;
  /** A request unanswered this long counts as "none" (no answer). */
  answerTimeoutMs?: number;
  /** An answer slower than this counts as slow. */
  slowMs?: number;
}): Promise<LoadResult> {
  const result: LoadResult = o.result ?? { accepted: [], answers: {}, slow: [] };
  const inflight = new Set<Promise<void>>();
  const start = Date.now();
  let n = 0;
  while (Date.now() - start < o.durationMs) {
    const due = Math.floor(((Date.now() - start) / 1000) * o.rate);
    for (; n < due; n++) {
      const i = n;
      const tenant = o.tenants[i % o.tenants.length]!;
      const targets = o.targets();
      const base = targets[i % targets.length]!;
      const userId = `${o.runId}-u${i}`;
      const t0 = Date.now();
      const p = fetch(`${base}/api/v1/consents`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${tenant.apiKey}`,
          'content-type': 'application/json',
        },
        body: JSON.stringify({
          userId,
          email: `${userId}@example.com`,
          consents: { analytics: true, marketing: false },
        }),
        signal: AbortSignal.timeout(o.answerTimeoutMs ?? 5_000),
      })
        .then(async (r) => {
          const body = (await r.json().catch(() => ({}))) as { referenceId?: string };
          const key = String(r.status);
          result.answers[key] = (result.answers[key] ?? 0) + 1;
          if (r.status === 201 && body.referenceId)
            result.accepted.push({ userId, referenceId: body.referenceId, tenant });
        })
        .catch(() => {
          result.answers.none = (result.answers.none ?? 0) + 1;
        })
        .finally(() => {
          if (Date.now() - t0 > (o.slowMs ?? 2_000)) result.slow.push(t0);
          inflight.delete(p);
        });
      inflight.add(p);
    }
    await delay(5);
  }
  await Promise.all(inflight);
  return result;
}

export interface Tally {
  accepted: number;
  delivered: number;
  lost: number;
  /** Webhooks received again after their id was already answered 2xx (at-least-once copies). */
  copies: number;
  /**
   * Of those, the ones with the attempt number of an attempt already received: the same
   * attempt made again (its record had not landed, or was lost), not a later attempt.
   */
  sameAttemptCopies: number;
  /** Consents whose consent.granted arrived under more than one webhook-id. */
  multipleIds: number;
  /** Webhooks received again with a body (so a sequence) other than their first receipt's. */
  changedCopies: number;
  badSignatures: number;
}

/** What the receiver saw for the accepted consents' consent.granted events. */
export function tally(accepted: Accepted[], receiver: Receiver): Tally {
  const granted = receiver.deliveries.filter((d) => d.type === 'consent.granted');
  const idsByRef = new Map<string, Set<string>>();
  for (const d of granted) {
    const s = idsByRef.get(d.referenceId) ?? new Set<string>();
    s.add(d.webhookId);
    idsByRef.set(d.referenceId, s);
  }
  const okIds = new Set(granted.filter((d) => d.status < 300).map((d) => d.webhookId));
  let delivered = 0;
  let multipleIds = 0;
  for (const a of accepted) {
    const ids = idsByRef.get(a.referenceId);
    if (ids && [...ids].some((id) => okIds.has(id)) && !a.tenant.endpoint.startsWith('failing'))
      delivered++;
    if (ids && ids.size > 1) multipleIds++;
  }
  // A copy is a webhook received again after its id was already answered 2xx: what a receiver
  // has to deduplicate. Retries after a failed answer (the failing endpoint's) are not copies.
  const answered = new Set<string>();
  const seen = new Set<string>();
  let copies = 0;
  let sameAttemptCopies = 0;
  const bodies = new Map<string, string>();
  let changedCopies = 0;
  for (const d of receiver.deliveries) {
    const first = bodies.get(d.webhookId);
    if (first === undefined) bodies.set(d.webhookId, d.bodySha);
    else if (first !== d.bodySha) changedCopies++;
    if (answered.has(d.webhookId)) {
      copies++;
      if (seen.has(`${d.webhookId}#${d.attempt}`)) sameAttemptCopies++;
    } else if (d.status < 300) answered.add(d.webhookId);
    seen.add(`${d.webhookId}#${d.attempt}`);
  }
  const expected = accepted.filter((a) => !a.tenant.endpoint.startsWith('failing')).length;
  return {
    accepted: accepted.length,
    delivered,
    lost: expected - delivered,
    copies,
    sameAttemptCopies,
    multipleIds,
    changedCopies,
    badSignatures: receiver.badSignatures.length,
  };
}

/** Waits until every accepted consent (to a healthy endpoint) was delivered, or the time is up. */
export async function waitDelivered(
  accepted: Accepted[],
  receiver: Receiver,
  timeoutMs: number,
  log: Log,
): Promise<Tally> {
  const until = Date.now() + timeoutMs;
  let last = -1;
  for (;;) {
    const t = tally(accepted, receiver);
    if (t.lost === 0 || Date.now() > until) return t;
    if (t.lost !== last) log(`waiting: ${t.lost} of ${t.accepted} accepted not yet delivered`);
    last = t.lost;
    await delay(1_000);
  }
}

interface LedgerDispatch {
  dispatchId: string;
  referenceId: string;
  event: string;
  deliveryStatus: string;
  attempts?: { statusCode?: number; outcome?: string }[];
}

export interface Balance {
  ok: boolean;
  /** Accepted consents without exactly one consent.granted dispatch in the ledger. */
  unbalanced: number;
  /** Webhook ids the receiver answered 2xx that the ledger has no successful attempt for. */
  unrecorded: number;
  dispatches: number;
}

function attemptOk(a: NonNullable<LedgerDispatch['attempts']>[number]): boolean {
  return typeof a.statusCode === 'number' && a.statusCode >= 200 && a.statusCode < 300;
}

/**
 * The ledger balance, read through the auditors' ledger API: every accepted consent has
 * exactly one consent.granted dispatch, and every webhook the receiver answered 2xx has a
 * successful attempt recorded under its webhook-id.
 */
export async function ledgerBalance(
  baseUrl: string,
  accepted: Accepted[],
  receiver: Receiver,
  o: { waitMs: number; log: Log; tenants: Tenant[] },
): Promise<Balance> {
  // A webhook is answered before its attempt is recorded, and an attempt whose record failed
  // is redone from Kafka: the ledger may trail the receiver when the load ends. The first pass
  // reads everything; later passes (every 2 s until `waitMs` from the first pass's end) re-read
  // only the consents and webhook ids that did not balance, so a long first pass (a soak's
  // thousands of dispatches) still leaves time to see the ledger catch up.
  const state = await balancePass(baseUrl, accepted, receiver, o.tenants);
  const until = Date.now() + o.waitMs;
  while (!state.ok && Date.now() < until) {
    o.log(
      `ledger: ${state.unbalanced.size} consents unbalanced, ${state.unrecorded.size} deliveries unrecorded`,
    );
    await delay(2_000);
    await recheck(baseUrl, state);
  }
  if (!state.ok) {
    // Name what did not balance, to find it in the service's log and the store.
    for (const [ref, a] of state.unbalanced) {
      const found = await listGranted(baseUrl, a.tenant, ref).catch(() => []);
      o.log(
        `  unbalanced ${ref}: ${found.length} consent.granted dispatch(es) ${found.map((d) => d.dispatchId).join(' ')}`,
      );
    }
    for (const id of state.unrecorded.keys()) {
      const seen = receiver.deliveries.filter((d) => d.webhookId === id);
      o.log(
        `  unrecorded ${id}: received ${seen.length} time(s) [${seen.map((d) => d.status).join(',')}] for ${seen[0]?.referenceId ?? '?'}`,
      );
    }
  }
  return {
    ok: state.ok,
    unbalanced: state.unbalanced.size,
    unrecorded: state.unrecorded.size,
    dispatches: state.dispatches,
  };
}

interface BalanceState {
  ok: boolean;
  /** Accepted consents (by referenceId) without exactly one consent.granted dispatch. */
  unbalanced: Map<string, Accepted>;
  /** Delivered webhook ids without a successful attempt, with the tenant to ask (if known). */
  unrecorded: Map<string, Tenant | undefined>;
  /** Every tenant, to find a webhook id not yet listed. */
  tenants: Tenant[];
  dispatches: number;
}

async function listGranted(baseUrl: string, t: Tenant, referenceId?: string) {
  const out: LedgerDispatch[] = [];
  let cursor: string | undefined;
  do {
    const q = new URLSearchParams({ event: 'consent.granted', limit: '200' });
    if (referenceId) q.set('referenceId', referenceId);
    if (cursor) q.set('cursor', cursor);
    const r = await readJson(`${baseUrl}/api/v1/ledger/dispatches?${q.toString()}`, t.apiKey);
    if (r.status !== 200) throw new Error(`ledger list: ${r.status} ${JSON.stringify(r.body)}`);
    out.push(...((r.body.items ?? []) as LedgerDispatch[]));
    cursor = (r.body.nextCursor as string | null | undefined) ?? undefined;
  } while (cursor);
  return out;
}

/**
 * What the ledger says of accepted consents that were not delivered: one line per consent with
 * its consent.granted dispatches, their status, next attempt and attempts, to find where each
 * one waits. Reads at most `limit` consents.
 */
export async function describeUndelivered(
  baseUrl: string,
  accepted: Accepted[],
  receiver: Receiver,
  limit = 20,
): Promise<string[]> {
  const okRefs = new Set(
    receiver.deliveries
      .filter((d) => d.type === 'consent.granted' && d.status < 300)
      .map((d) => d.referenceId),
  );
  const missing = accepted
    .filter((a) => !a.tenant.endpoint.startsWith('failing') && !okRefs.has(a.referenceId))
    .slice(0, limit);
  const lines: string[] = [];
  for (const a of missing) {
    const seen = receiver.deliveries.filter((d) => d.referenceId === a.referenceId);
    const granted = await listGranted(baseUrl, a.tenant, a.referenceId).catch((e: Error) => e);
    const ledger =
      granted instanceof Error
        ? `ledger error ${granted.message}`
        : JSON.stringify(
            await Promise.all(
              granted.map(async (d) => {
                const r = await readJson(
                  `${baseUrl}/api/v1/ledger/dispatches/${d.dispatchId}`,
                  a.tenant.apiKey,
                );
                const b = r.body as Record<string, unknown>;
                return {
                  id: d.dispatchId,
                  status: b.deliveryStatus,
                  created: b.createdAt,
                  next: b.nextAttemptAt,
                  attempts: (b.attempts as Record<string, unknown>[] | undefined)?.map((t) => ({
                    time: t.time,
                    trigger: t.trigger,
                    status: t.statusCode,
                    error: t.errorClass,
                    outcome: t.outcome,
                  })),
                };
              }),
            ),
          );
    lines.push(
      `${a.referenceId} (${a.tenant.endpoint}): receiver saw ${seen.length} [${seen
        .map((d) => `${d.type}:${d.status}`)
        .join(',')}]; ledger ${ledger}`,
    );
  }
  return lines;
}

/** Whether the ledger has a successful attempt under this webhook id. */
async function recorded(baseUrl: string, id: string, tenant: Tenant): Promise<boolean> {
  const r = await readJson(`${baseUrl}/api/v1/ledger/dispatches/${id}`, tenant.apiKey);
  const d = r.body as unknown as LedgerDispatch;
  return r.status === 200 && (d.attempts?.some(attemptOk) ?? false);
}

/** Runs `fn` over `items`, 16 at a time. */
async function each<T>(items: T[], fn: (t: T) => Promise<void>): Promise<void> {
  const queue = [...items];
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      for (let x = queue.pop(); x !== undefined; x = queue.pop()) await fn(x);
    }),
  );
}

async function balancePass(
  baseUrl: string,
  accepted: Accepted[],
  receiver: Receiver,
  receiverTenants: Tenant[] = [],
): Promise<BalanceState> {
  const tenants = [...new Set([...accepted.map((a) => a.tenant), ...receiverTenants])];
  const byRef = new Map<string, LedgerDispatch[]>();
  const byId = new Map<string, Tenant>();
  for (const t of tenants)
    for (const d of await listGranted(baseUrl, t)) {
      byRef.set(d.referenceId, [...(byRef.get(d.referenceId) ?? []), d]);
      byId.set(d.dispatchId, t);
    }
  const unbalanced = new Map(
    accepted.filter((a) => byRef.get(a.referenceId)?.length !== 1).map((a) => [a.referenceId, a]),
  );
  const okIds = new Set(
    receiver.deliveries
      .filter((d) => d.type === 'consent.granted' && d.status < 300)
      .map((d) => d.webhookId),
  );
  // Each delivered webhook-id is read whole (the list gives summaries).
  const unrecorded = new Map<string, Tenant | undefined>();
  await each([...okIds], async (id) => {
    const tenant = byId.get(id);
    if (!tenant || !(await recorded(baseUrl, id, tenant))) unrecorded.set(id, tenant);
  });
  return {
    ok: unbalanced.size === 0 && unrecorded.size === 0,
    unbalanced,
    unrecorded,
    tenants,
    dispatches: byId.size,
  };
}

/** Re-reads only what did not balance; what now does leaves the state. */
async function recheck(baseUrl: string, s: BalanceState): Promise<void> {
  await each([...s.unbalanced.values()], async (a) => {
    const found = await listGranted(baseUrl, a.tenant, a.referenceId);
    if (found.length === 1) s.unbalanced.delete(a.referenceId);
  });
  await each([...s.unrecorded.keys()], async (id) => {
    const known = s.unrecorded.get(id);
    for (const t of known ? [known] : s.tenants)
      if (await recorded(baseUrl, id, t)) {
        s.unrecorded.delete(id);
        return;
      }
  });
  s.ok = s.unbalanced.size === 0 && s.unrecorded.size === 0;
}
