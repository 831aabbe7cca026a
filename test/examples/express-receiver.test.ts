import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createClient, type SvcClient } from '../../clients/typescript/src/index.js';
import { startPipeline, type Pipeline, type PipelineApp } from '../compliance/fixture.js';
import { freePort } from '../portal/fixture.js';

/**
 * examples/express-receiver run as a user runs it (its own process, `tsx`, the SDK by its
 * package name) against the real stack: a consent the app creates and withdraws over the SDK's
 * client reaches it signed, and its automatic postback turns the withdrawal's flag `ok`.
 */
let f: Pipeline;
let a: PipelineApp;
let example: ChildProcess;
const lines: Record<string, unknown>[] = [];
let sdk: SvcClient;

beforeAll(async () => {
  const port = await freePort();
  // Postbacks go to PUBLIC_BASE_URL (the event's `data.postback.url`): here, this process.
  f = await startPipeline('example-receiver', {
    PORT: String(port),
    PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
  });
  a = await f.createApp(1);
  example = spawn(process.execPath, ['--import', 'tsx', 'examples/express-receiver/server.ts'], {
    env: { ...process.env, SVC_SECRET_KEY: a.secretKey, PORT: '0' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    example.once('exit', (code) => reject(new Error(`the example exited with ${code}`)));
    createInterface({ input: example.stdout! }).on('line', (line) => {
      const m = /^listening on (\S+)$/.exec(line);
      if (m) resolve(m[1]!);
      else if (line.startsWith('{')) lines.push(JSON.parse(line) as Record<string, unknown>);
    });
  });
  await f.admin('PATCH', `/apps/${a.appId}`, { webhookUrl: url });
  sdk = createClient({ baseUrl: f.p.url, apiKey: a.key });
}, 120_000);
afterAll(async () => {
  if (example && example.exitCode === null) {
    const exited = new Promise((r) => example.once('exit', r));
    example.kill('SIGTERM');
    await exited;
  }
  await f?.close();
});

describe('examples/express-receiver', () => {
  it('receives a withdrawal made over the SDK and its postback turns the flag ok', async () => {
    const created = await sdk.post('/api/v1/consents', {
      body: { userId: 'example-user', email: 'ex@mail.example', consents: { marketing: true } },
    });
    expect(created.userId).toBe('example-user');
    const withdrawn = await sdk.delete('/api/v1/consents/{userId}', {
      path: { userId: 'example-user' },
    });
    expect(withdrawn.referenceId).toBe(created.referenceId);

    // The example handled the withdrawal, after the creation, with a newer sequence.
    const handled = await vi.waitFor(
      () => {
        const w = lines.find((l) => l.handled === 'consent.withdrawn');
        expect(w, JSON.stringify(lines)).toBeDefined();
        return w!;
      },
      { timeout: 30_000, interval: 100 },
    );
    const events = lines.filter((l) => l.referenceId === created.referenceId);
    const seq = (type: string) => events.find((l) => l.type === type)?.sequence as number;
    expect(seq('consent.withdrawn')).toBeGreaterThan(seq('consent.created'));
    expect(events.find((l) => l.type === 'consent.withdrawn')?.state).toEqual({
      marketing: 'withdrawn',
    });

    // Its postback, posted by the SDK from the handler's result, made the flag ok; read
    // through the ledger API with the SDK too.
    const dispatchId = String(handled.dispatchId);
    await vi.waitFor(
      async () => {
        const d = await sdk.get('/api/v1/ledger/dispatches/{dispatchId}', {
          path: { dispatchId },
        });
        expect(d.deliveryStatus).toBe('delivered');
        expect(d.flagHistory.map((h) => h.flag)).toEqual(['ok']);
      },
      { timeout: 30_000, interval: 200 },
    );
  }, 90_000);
});
