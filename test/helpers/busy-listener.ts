import type { AddressInfo } from 'node:net';
import express from 'express';
import { listen } from '../../shared/http/server.js';

/**
 * A server started by the service's `listen`, whose event loop is then held busy: until it
 * is free again, a connection can only wait in the kernel's listen backlog. Prints its port,
 * then `free` once the loop is free. Arguments: backlog, busy milliseconds.
 */
const [backlog, busyMs] = process.argv.slice(2).map(Number);
const app = express();
app.get('/', (_req, res) => res.send('ok'));
const server = await listen(app, 0, '127.0.0.1', backlog);
// Writes to a pipe are synchronous on Linux: the parent has the port before the loop is held.
process.stdout.write(`${(server.address() as AddressInfo).port}\n`);
const end = Date.now() + busyMs!;
while (Date.now() < end) {
  // Busy: no connection is accepted meanwhile.
}
process.stdout.write('free\n');
process.stdin.on('end', () => process.exit(0)).resume();
