import type { Logger } from './logger.js';

export interface ShutdownStep {
  name: string;
  run: () => Promise<void> | void;
}

/** Thrown by `Lifecycle.step` once stopping began: the start-up ends there. */
export class StartAborted extends Error {
  constructor(step: string) {
    super(`stopping: ${step} not started`);
    this.name = 'StartAborted';
  }
}

/**
 * A process's start-up and stop as one sequence, so a stop may come at any instant. Each start
 * step registers how to undo what it made before it counts as done; `stop()` aborts the
 * start-up (`signal`; no further step runs), waits for the steps in flight, then runs the
 * registered stop steps in reverse order, each even when another failed (failures are logged).
 * `stop()` is idempotent: a second call returns the first call's promise.
 */
export class Lifecycle {
  private readonly steps: ShutdownStep[] = [];
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly abort = new AbortController();
  private stopped: Promise<void> | undefined;
  private undone = false;

  constructor(private readonly log: Logger) {}

  /** Aborted once stopping began: a long start step (a wait, a retry loop) gives up on it. */
  get signal(): AbortSignal {
    return this.abort.signal;
  }

  get stopping(): boolean {
    return this.abort.signal.aborted;
  }

  /**
   * Runs a start step, unless stopping began (then it rejects with StartAborted). `undo`, given
   * what the step made, is registered as the step's stop step as soon as the step succeeds.
   */
  step<T>(
    name: string,
    start: (signal: AbortSignal) => Promise<T> | T,
    undo?: (made: T) => Promise<void> | void,
  ): Promise<T> {
    if (this.stopping) return Promise.reject(new StartAborted(name));
    const run = (async () => {
      const made = await start(this.signal);
      if (undo) this.onStop(name, () => undo(made));
      return made;
    })();
    const settled = run.then(
      () => undefined,
      () => undefined,
    );
    this.inFlight.add(settled);
    void settled.then(() => this.inFlight.delete(settled));
    return run;
  }

  /**
   * Registers a stop step. One registered while the stop steps run runs next; one registered
   * after they ran runs at once.
   */
  onStop(name: string, run: ShutdownStep['run']): void {
    this.steps.push({ name, run });
    if (this.undone) void this.runSteps();
  }

  stop(): Promise<void> {
    return (this.stopped ??= (async () => {
      this.abort.abort();
      await Promise.all(this.inFlight);
      await this.runSteps();
      this.undone = true;
    })());
  }

  private async runSteps(): Promise<void> {
    for (let s = this.steps.pop(); s; s = this.steps.pop()) {
      try {
        await s.run();
      } catch (err) {
        this.log.warn({ err, step: s.name }, 'shutdown step failed');
      }
    }
  }
}

/**
 * First SIGINT/SIGTERM drains (runs `close`, then exits 0); a second signal, or the drain
 * outlasting `timeoutMs`, forces exit 1. Installed before anything starts, with a
 * `Lifecycle`'s `stop` as `close`, so a signal during start-up stops what has started.
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
