import type { Logger } from './logger.js';

export interface ShutdownStep {
  name: string;
  run: () => Promise<void> | void;
}

/**
 * Runs every step in order even when one fails; each failure is logged. Idempotent: a second
 * call returns the first call's promise.
 */
export function makeCloser(steps: ShutdownStep[], log: Logger): () => Promise<void> {
  let done: Promise<void> | undefined;
  return () =>
    (done ??= (async () => {
      for (const s of steps) {
        try {
          await s.run();
        } catch (err) {
          log.warn({ err, step: s.name }, 'shutdown step failed');
        }
      }
    })());
}

/**
 * First SIGINT/SIGTERM drains (runs `close`, then exits 0); a second signal, or the drain
 * outlasting `timeoutMs`, forces exit 1.
 */
export function installShutdown(close: () => Promise<void>, log: Logger, timeoutMs: number) {
  let draining = false;
  let firstAt = 0;
  const onSignal = (sig: NodeJS.Signals) => {
    // One Ctrl-C reaches us twice (from the terminal's process group and relayed by npm/tsx);
    // only a signal well after the first counts as "force".
    if (draining && Date.now() - firstAt < 1000) return;
    if (draining) {
      log.warn({ sig }, 'second signal: forcing exit');
      process.exit(1);
    }
    draining = true;
    firstAt = Date.now();
    log.info({ sig }, 'shutting down (send the signal again to force)');
    const force = setTimeout(() => {
      log.error({ timeoutMs }, 'shutdown timed out: forcing exit');
      process.exit(1);
    }, timeoutMs);
    force.unref();
    void close().then(
      () => process.exit(0),
      (err: unknown) => {
        log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
}
