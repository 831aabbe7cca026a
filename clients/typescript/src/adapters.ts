import type { IncomingMessage, ServerResponse } from 'node:http';
import { createReceiver, type Receiver, type ReceiverOptions } from './receiver.js';

/**
 * The receiver on three servers. Each hands the raw body (never a re-serialised one) to the
 * receiver and answers what it says. Types are structural, so the SDK depends on none of them.
 */

const receiverOf = (r: Receiver | ReceiverOptions): Receiver =>
  typeof r === 'function' ? r : createReceiver(r);

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(typeof c === 'string' ? Buffer.from(c) : (c as Buffer));
  return Buffer.concat(chunks);
}

/**
 * An Express (or plain `node:http`) handler: `app.post('/webhooks', expressWebhooks(opts))`.
 * Mount it without a JSON body parser before it, or behind `express.raw({ type: 'application/json' })`.
 */
export function expressWebhooks(r: Receiver | ReceiverOptions) {
  const receive = receiverOf(r);
  return (
    req: IncomingMessage & { body?: unknown },
    res: ServerResponse,
    next?: (err?: unknown) => void,
  ): void => {
    void (async () => {
      const body = Buffer.isBuffer(req.body) || typeof req.body === 'string' ? req.body : undefined;
      if (req.body !== undefined && body === undefined && !req.readable)
        throw new Error('expressWebhooks needs the raw body: mount it before express.json()');
      const answer = await receive(body ?? (await readBody(req)), req.headers);
      res
        .writeHead(answer.status, { 'content-type': 'application/json' })
        .end(JSON.stringify(answer.body));
    })().catch((err: unknown) => (next ? next(err) : res.writeHead(500).end()));
  };
}

interface FastifyLike {
  addContentTypeParser(
    type: string,
    opts: { parseAs: 'buffer' },
    parser: (req: unknown, body: Buffer, done: (err: Error | null, body?: Buffer) => void) => void,
  ): void;
  post(
    path: string,
    handler: (
      req: { body: unknown; headers: IncomingMessage['headers'] },
      reply: { code(status: number): { send(body: unknown): unknown } },
    ) => Promise<unknown>,
  ): unknown;
}

/**
 * A Fastify plugin: `app.register(fastifyWebhooks(opts), { prefix: '/webhooks' })` receives at
 * POST /webhooks. Inside the plugin JSON bodies stay raw (Fastify's encapsulation keeps the
 * parser to it).
 */
export function fastifyWebhooks(r: Receiver | ReceiverOptions) {
  const receive = receiverOf(r);
  return async (app: FastifyLike): Promise<void> => {
    app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_req, body, done) =>
      done(null, body),
    );
    app.post('/', async (req, reply) => {
      const answer = await receive(req.body as Buffer, req.headers);
      return reply.code(answer.status).send(answer.body);
    });
  };
}

/** A Next.js App Router route handler: `export const POST = nextWebhooks(opts)` in route.ts. */
export function nextWebhooks(r: Receiver | ReceiverOptions) {
  const receive = receiverOf(r);
  return async (req: Request): Promise<Response> => {
    const answer = await receive(new Uint8Array(await req.arrayBuffer()), req.headers, req.signal);
    return Response.json(answer.body, { status: answer.status });
  };
}
