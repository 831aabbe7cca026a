import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The core (`shared/`) is built in floors, each importing only its own floor and those below:
 *   0 base       errors, env, logger, metrics, backoff, secrets, telemetry, shutdown, config,
 *                tuning, every module's settings and address arithmetic (net/)
 *   1 domain     the rules, types and ports (interfaces) of consents, apps, notices, …
 *   2 clients    the Kafka client (bus) and signing keys
 *   3 storage    the DynamoDB client and the adapters that implement the domain's ports
 *   4 features   timers, webhooks, compliance, ledger, mail, duties, … and HTTP; and the
 *                runtime (shared/runtime.ts), which builds every client and store of a process
 *   5 process    the host and process that run services and workers
 * So the domain knows no table and the adapters no feature. Only the services, workers and the
 * process host see the whole runtime: every module of `shared/` declares the deps it uses (a
 * Runtime passes as it is). Type-only imports count: a port is declared where its user is.
 */
const root = path.resolve(import.meta.dirname, '../..');
const shared = path.join(root, 'shared');

const BASE = new Set([
  'errors.ts',
  'env.ts',
  'logger.ts',
  'metrics.ts',
  'backoff.ts',
  'secret-file.ts',
  'telemetry.ts',
  'shutdown.ts',
  'config.ts',
  'tuning.ts',
]);
const PROCESS = new Set(['host.ts', 'process.ts']);
const BY_DIR: Record<string, number> = { net: 0, domain: 1, bus: 2, signing: 2, storage: 3 };

/** The floor of a file of `shared/`, by its path. */
export function floorOf(rel: string): number {
  const parts = rel.split('/');
  if (parts.length === 1) return BASE.has(parts[0]!) ? 0 : PROCESS.has(parts[0]!) ? 5 : 4;
  if (parts.at(-1) === 'settings.ts') return 0;
  return BY_DIR[parts[0]!] ?? 4;
}

function files(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return files(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') ? [p] : [];
  });
}

function importsOf(file: string): string[] {
  const src = fs.readFileSync(file, 'utf8');
  return [...src.matchAll(/(?:from|import)\s*\(?\s*['"]([^'"]+)['"]/g)].map((m) => m[1]!);
}

/** Each import of `shared/` that goes to a higher floor, and each `@aws-sdk` import outside storage. */
export function floorViolations(): string[] {
  const bad: string[] = [];
  for (const file of files(shared)) {
    const rel = path.relative(shared, file).split(path.sep).join('/');
    const floor = floorOf(rel);
    for (const spec of importsOf(file)) {
      if (spec.startsWith('@aws-sdk/') && floor !== 3) bad.push(`shared/${rel} → ${spec}`);
      if (!spec.startsWith('.')) continue;
      const target = path.relative(shared, path.resolve(path.dirname(file), spec));
      if (target.startsWith('..')) continue;
      const to = target.split(path.sep).join('/').replace(/\.js$/, '.ts');
      if (floorOf(to) > floor)
        bad.push(`shared/${rel} (floor ${floor}) → shared/${to} (floor ${floorOf(to)})`);
    }
  }
  return bad.sort();
}

/** `@aws-sdk` imports outside shared/storage/ and infra/ (services, workers, bin). */
function sdkOutsideStorage(): string[] {
  return ['services', 'workers', 'bin'].flatMap((top) =>
    files(path.join(root, top))
      .filter((f) => importsOf(f).some((s) => s.startsWith('@aws-sdk/')))
      .map((f) => path.relative(root, f)),
  );
}

/** The files of `shared/` that may import the runtime: itself, and the process host. */
const SEES_RUNTIME = new Set(['runtime.ts', 'host.ts', 'process.ts']);

/** Each import of shared/runtime.ts by another file of `shared/` (but the process host). */
export function runtimeImports(): string[] {
  const runtime = path.join(shared, 'runtime');
  const bad: string[] = [];
  for (const file of files(shared)) {
    const rel = path.relative(shared, file).split(path.sep).join('/');
    if (SEES_RUNTIME.has(rel)) continue;
    for (const spec of importsOf(file)) {
      if (!spec.startsWith('.')) continue;
      const target = path.resolve(path.dirname(file), spec).replace(/\.(js|ts)$/, '');
      if (target === runtime) bad.push(`shared/${rel} → ${spec}`);
    }
  }
  return bad.sort();
}

describe('floors of the core', () => {
  it('imports only go down or across a floor, and only storage talks to DynamoDB', () => {
    expect(floorViolations()).toEqual([]);
    expect(sdkOutsideStorage()).toEqual([]);
  });

  it('finds an import from the domain up to storage (the check can fail)', () => {
    const probe = path.join(shared, 'domain', '__floors_probe.ts');
    fs.writeFileSync(probe, "export { queryAll } from '../storage/query.js';\n");
    try {
      expect(floorViolations()).toContain(
        'shared/domain/__floors_probe.ts (floor 1) → shared/storage/query.ts (floor 3)',
      );
    } finally {
      fs.rmSync(probe);
    }
  });

  it('only the process host imports the whole runtime; the modules take narrow deps', () => {
    expect(runtimeImports()).toEqual([]);
  });

  it('finds a module importing the runtime (the check can fail)', () => {
    const probe = path.join(shared, 'timers', '__runtime_probe.ts');
    fs.writeFileSync(
      probe,
      "import type { Runtime } from '../runtime.js';\nexport type Probe = Runtime;\n",
    );
    try {
      expect(runtimeImports()).toEqual(['shared/timers/__runtime_probe.ts → ../runtime.js']);
    } finally {
      fs.rmSync(probe);
    }
  });
});
