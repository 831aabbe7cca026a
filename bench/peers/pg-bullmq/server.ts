import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { Queue, Worker } from 'bullmq';
import express from 'express';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { z } from 'zod';

/**
 * The peer a team might build instead, for `npm run bench -- e2e`: Express 5 with zod; the
 * consent and its two messages (consent.created, consent.granted) in one PostgreSQL
 * transaction (fsync and synchronous_commit on); one BullMQ job per message in Redis (AOF
 * every second); a worker with concurrency 64 that signs each message (Standard Webhooks),
 * POSTs it and records the attempt in PostgreSQL. One Node process, like `npm start`.
 *
 * Environment: PORT, PG_URL, REDIS_PORT, PEER_API_KEY, PEER_WEBHOOK_URL, PEER_SECRET (base64).
 */

const env = (k: string) => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is not set`);
  return v;
};
const pool = new pg.Pool({ connectionString: env('PG_URL'), max: 20 });
const connection = { host: '127.0.0.1', port: Number(env('REDIS_PORT')) };
const queue = new Queue('webhooks', { connection });
const webhookUrl = env('PEER_WEBHOOK_URL');
const signer = new Webhook(env('PEER_SECRET'));
const apiKeyHash = createHash('sha256').update(env('PEER_API_KEY')).digest('hex');

await pool.query(`
  CREATE TABLE IF NOT EXISTS api_keys (hash text PRIMARY KEY, app_id text NOT NULL);
  CREATE TABLE IF NOT EXISTS consents (
    id uuid PRIMARY KEY, app_id text NOT NULL, user_id text NOT NULL, email text NOT NULL,
    reference_id text NOT NULL, purposes jsonb NOT NULL, created_at timestamptz NOT NULL,
    UNIQUE (app_id, user_id));
  CREATE TABLE IF NOT EXISTS messages (
    id text PRIMARY KEY, consent_id uuid NOT NULL REFERENCES consents(id), type text NOT NULL,
    payload jsonb NOT NULL, created_at timestamptz NOT NULL);
  CREATE TABLE IF NOT EXISTS attempts (
    id bigserial PRIMARY KEY, message_id text NOT NULL REFERENCES messages(id),
    status int NOT NULL, duration_ms int NOT NULL, at timestamptz NOT NULL);
  INSERT INTO api_keys VALUES ('${apiKeyHash}', 'app_peer') ON CONFLICT DO NOTHING;
`);

const body = z.object({
  userId: z.string().min(1).max(256),
  email: z.email(),
  consents: z.record(z.string().regex(/^[a-z0-9_]{1,64}$/), z.boolean()),
});

const app = express();
app.use(express.json({ limit: '64kb' }));
app.post('/api/v1/consents', async (req, res) => {
  const token = /^Bearer (.+)$/.exec(req.get('authorization') ?? '')?.[1] ?? '';
  const hash = createHash('sha256').update(token).digest('hex');
  const key = await pool.query<{ app_id: string }>('SELECT app_id FROM api_keys WHERE hash = $1', [
    hash,
  ]);
  const appId = key.rows[0]?.app_id;
  if (!appId) return res.status(401).json({ title: 'Unauthorized' });
  const parsed = body.safeParse(req.body);
  if (!parsed.success) return res.status(422).json({ title: 'Invalid body' });
  const b = parsed.data;
  const id = randomUUID();
  const referenceId = `REF-${randomBytes(5).toString('hex').toUpperCase()}`;
  const now = new Date();
  const messages = ['consent.created', 'consent.granted'].map((type) => ({
    id: `msg_${randomUUID()}`,
    type,
    payload: {
      type,
      timestamp: now.toISOString(),
      data: { consentId: id, referenceId, userId: b.userId, consents: b.consents },
    },
  }));
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('INSERT INTO consents VALUES ($1, $2, $3, $4, $5, $6, $7)', [
      id,
      appId,
      b.userId,
      b.email,
      referenceId,
      JSON.stringify(b.consents),
      now,
    ]);
    for (const m of messages)
      await client.query('INSERT INTO messages VALUES ($1, $2, $3, $4, $5)', [
        m.id,
        id,
        m.type,
        JSON.stringify(m.payload),
        now,
      ]);
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    client.release();
    if ((err as { code?: string }).code === '23505')
      return res.status(409).json({ title: 'Conflict' });
    throw err;
  }
  client.release();
  await queue.addBulk(
    messages.map((m) => ({ name: m.type, data: m, opts: { jobId: m.id, attempts: 10 } })),
  );
  res.status(201).json({ consentId: id, referenceId, userId: b.userId });
});

const worker = new Worker(
  'webhooks',
  async (job) => {
    const m = job.data as { id: string; payload: unknown };
    const payload = JSON.stringify(m.payload);
    const at = new Date();
    const signature = signer.sign(m.id, at, payload);
    const t0 = Date.now();
    const r = await fetch(webhookUrl, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'webhook-id': m.id,
        'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
        'webhook-signature': signature,
      },
      body: payload,
      signal: AbortSignal.timeout(10_000),
    });
    await r.arrayBuffer();
    await pool.query(
      'INSERT INTO attempts (message_id, status, duration_ms, at) VALUES ($1, $2, $3, $4)',
      [m.id, r.status, Date.now() - t0, at],
    );
    if (!r.ok) throw new Error(`endpoint answered ${r.status}`);
  },
  { connection, concurrency: 64 },
);

const server = app.listen(Number(env('PORT')), '127.0.0.1', () =>
  process.stdout.write(`peer ready at http://127.0.0.1:${env('PORT')}\n`),
);
const stop = async () => {
  server.close();
  await worker.close();
  await queue.close();
  await pool.end();
  process.exit(0);
};
process.on('SIGTERM', () => void stop());
process.on('SIGINT', () => void stop());
