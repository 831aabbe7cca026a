import type { IncomingMessage } from 'node:http';

/**
 * The bytes of a JSON body exactly as received, kept beside the parsed body for the few routes
 * that must check a signature over them (the sandbox webhook inbox). Held only as long as the
 * request itself.
 */
const raw = new WeakMap<IncomingMessage, Buffer>();

/** The JSON body parser's `verify` hook: remembers the bytes it is about to parse. */
export function keepRawBody(req: IncomingMessage, _res: unknown, buf: Buffer): void {
  raw.set(req, buf);
}

/** The raw bytes of a JSON body the parser read, if it read one. */
export function rawBodyOf(req: IncomingMessage): Buffer | undefined {
  return raw.get(req);
}
