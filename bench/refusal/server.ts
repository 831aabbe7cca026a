import { Registry } from 'prom-client';
import { AppError } from '../../shared/errors.js';
import { sendProblem } from '../../shared/http/problem.js';
import { createHttpApp, finishHttpApp, listen } from '../../shared/http/server.js';
import { createLogger } from '../../shared/logger.js';

/**
 * The server `npm run bench -- refusal` measures (bench/refusal.ts): the service's HTTP layer
 * (`createHttpApp` + `listen`) with HTTP_MAX_IN_FLIGHT 1, and a route that never answers, so
 * that once the bench holds one request on it every other API request is refused by admission
 * control. Beside it, the baseline: the same 503 problem answered by an Express route, the path
 * a refusal took when admission control was Express middleware (trace span, HTTP metrics,
 * routing, `sendProblem`). Prints its port on stdout.
 */
const log = createLogger({ level: 'silent' });
const app = createHttpApp({
  log,
  registry: new Registry(),
  bodyLimitBytes: 65_536,
  readiness: {},
  maxInFlight: 1,
  deadlineMs: 3_600_000,
});
app.post('/api/hold', () => undefined);
app.post('/through-express', (req, res) =>
  sendProblem(
    res,
    new AppError('SVC_UNAVAILABLE', 'The service is at capacity; retry shortly', {
      retryAfterS: 1,
    }),
    req.originalUrl,
  ),
);
finishHttpApp(app, log);
const srv = await listen(app, 0, '127.0.0.1');
console.log(String((srv.address() as { port: number }).port));
