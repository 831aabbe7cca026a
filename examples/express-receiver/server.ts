/**
 * A webhook receiver for svc-consent on Express, with the SDK (@svc-consent/sdk): it verifies
 * each webhook's signature on the raw body, drops an event older than what it already handled
 * for that consent, calls `handle`, and posts the postback the event asks for from what
 * `handle` returns. Run: SVC_SECRET_KEY=svc_sk_… npx tsx examples/express-receiver/server.ts
 */
import express from 'express';
import { expressWebhooks, type ConsentEvent, type HandlerResult } from '@svc-consent/sdk';

const secretKey = process.env.SVC_SECRET_KEY;
if (!secretKey) {
  console.error(
    "SVC_SECRET_KEY is not set: the app's secret key (svc_sk_…), shown once at its creation",
  );
  process.exit(2);
}
const port = Number(process.env.PORT ?? 3000);

/** Your app's side of each change. Here: one log line; yours stops or starts the processing. */
function handle(event: ConsentEvent): HandlerResult {
  const { referenceId, sequence, state } = event.data;
  console.log(JSON.stringify({ type: event.type, referenceId, sequence, state }));
  if (event.type === 'consent.withdrawn')
    return { status: 'processed', actions: [{ type: 'stop_processing', result: 'done' }] };
  return { status: 'processed' };
}

const app = express();
// No JSON body parser before it: the signature is over the raw body.
app.post(
  '/webhooks',
  expressWebhooks({
    secretKey,
    handler: (event, ctx) => {
      const result = handle(event);
      console.log(JSON.stringify({ handled: event.type, dispatchId: ctx.dispatchId }));
      return result;
    },
  }),
);
const server = app.listen(port, '127.0.0.1', () => {
  const addr = server.address();
  const at = typeof addr === 'object' && addr ? addr.port : port;
  console.log(`listening on http://127.0.0.1:${at}/webhooks`);
});
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.on(signal, () => server.close(() => process.exit(0)));
