import { describe, expect, it } from 'vitest';
import { createLogger } from './logger.js';
import { Lifecycle, StartAborted } from './shutdown.js';

const log = createLogger({ level: 'silent' });

/** A promise with its resolve, to hold a start step in flight. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  return { open, opened };
}

describe('Lifecycle', () => {
  it('undoes what started in reverse order', async () => {
    const life = new Lifecycle(log);
    const done: string[] = [];
    await life.step(
      'stack',
      () => 'stack',
      (m) => void done.push(m),
    );
    await life.step(
      'clients',
      async () => 'clients',
      (m) => void done.push(m),
    );
    life.onStop('workers', () => void done.push('workers'));
    await life.step(
      'http',
      () => 'http',
      (m) => void done.push(m),
    );
    await life.step('nothing to undo', () => undefined);
    await life.stop();
    expect(done).toEqual(['http', 'workers', 'clients', 'stack']);
  });

  it('a stop during a step waits for it, undoes it with the rest, and starts nothing more', async () => {
    const life = new Lifecycle(log);
    const done: string[] = [];
    await life.step(
      'stack',
      () => 'stack',
      (m) => void done.push(m),
    );
    const g = gate();
    let signalled = false;
    const worker = life.step(
      'worker',
      async (signal) => {
        await g.opened;
        signalled = signal.aborted;
        return 'worker';
      },
      (m) => void done.push(m),
    );
    const stopped = life.stop();
    expect(life.stopping).toBe(true);
    // Not undone while the step is in flight.
    await new Promise((r) => setTimeout(r, 20));
    expect(done).toEqual([]);
    g.open();
    await expect(worker).resolves.toBe('worker');
    // The caller's next step is refused: the start-up ends there.
    await expect(
      life.step(
        'next',
        () => 'next',
        (m) => void done.push(m),
      ),
    ).rejects.toBeInstanceOf(StartAborted);
    await stopped;
    expect(signalled).toBe(true);
    expect(done).toEqual(['worker', 'stack']);
  });

  it('a step that gives up on the abort leaves only the earlier steps to undo', async () => {
    const life = new Lifecycle(log);
    const done: string[] = [];
    await life.step(
      'telemetry',
      () => 'telemetry',
      (m) => void done.push(m),
    );
    const stack = life.step(
      'stack',
      (signal) =>
        new Promise<string>((_, reject) =>
          signal.addEventListener('abort', () => reject(new Error('aborted'))),
        ),
      (m) => void done.push(m),
    );
    await life.stop();
    await expect(stack).rejects.toThrow('aborted');
    expect(done).toEqual(['telemetry']);
  });

  it('runs every stop step when one fails, once however often stop is called', async () => {
    const life = new Lifecycle(log);
    const done: string[] = [];
    life.onStop('a', () => void done.push('a'));
    life.onStop('b', () => {
      throw new Error('b failed');
    });
    life.onStop('c', async () => {
      await new Promise((r) => setTimeout(r, 5));
      done.push('c');
    });
    await Promise.all([life.stop(), life.stop()]);
    await life.stop();
    expect(done).toEqual(['c', 'a']);
  });

  it('a stop step registered after the stop ran runs at once', async () => {
    const life = new Lifecycle(log);
    await life.stop();
    let ran = false;
    life.onStop('late', () => {
      ran = true;
    });
    await new Promise((r) => setTimeout(r, 0));
    expect(ran).toBe(true);
  });
});
