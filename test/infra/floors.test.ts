import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The core (`shared/`) is built in floors, each importing only its own floor and those below:
 *   0 base       errors, env, logger, metrics, backoff, secrets, telemetry, shutdown, config,
 *                tuning, every module's settings and address arithmetic (net/)
 *   1 domain     the rules, types and ports (interfaces) of consents, apps, notices, …
 *   2 clients    the Kafka client (bus) and signing keys
 *   3 storage    the DynamoDB client and the adapters that implement the domain's ports
 *   4 features   timers, webhooks, compliance, ledger, mail, duties, … and HTTP, with the
 *                runtime they are handed (declared in shared/runtime.ts) and what services
 *                and workers implement (shared/module.ts)
 * Above them, floor 5 is `bin/`: the composition root (bin/compose.ts, which builds the runtime)
 * and the hosts that run services and workers (bin/host.ts, bin/process.ts), with the entries
 * and tools. Nothing in `shared/` imports `bin/`, and of `services/` and `workers/` only the
 * `main.ts` entries do (each runs its module on bin/process.ts).
 * So the domain knows no table and the adapters no feature. Only the services, workers and
 * `bin/` see the whole runtime: every module of `shared/` declares the deps it uses (a Runtime
 * passes as it is). Type-only imports count: a port is declared where its user is.
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
const BY_DIR: Record<string, number> = { net: 0, domain: 1, bus: 2, signing: 2, storage: 3 };

/** The floor of a file of `shared/`, by its path. */
export function floorOf(rel: string): number {
  const parts = rel.split('/');
  if (parts.length === 1) return BASE.has(parts[0]!) ? 0 : 4;
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

/**
 * Imports of `bin/` (floor 5) from below it: any from `shared/`, and from `services/` and
 * `workers/` any but their `main.ts` entries'. Of the tree at `top` (the project's by default).
 */
export function binViolations(top = root): string[] {
  const bin = path.join(top, 'bin');
  return ['shared', 'services', 'workers'].flatMap((dir) =>
    files(path.join(top, dir)).flatMap((file) => {
      const rel = path.relative(top, file).split(path.sep).join('/');
      const entry = dir !== 'shared' && path.basename(file) === 'main.ts';
      return importsOf(file)
        .filter((s) => s.startsWith('.'))
        .map((s) => path.resolve(path.dirname(file), s))
        .filter((t) => !entry && !path.relative(bin, t).startsWith('..'))
        .map((t) => `${rel} → ${path.relative(top, t).split(path.sep).join('/')}`);
    }),
  );
}

/**
 * The files of `shared/` that may import the runtime: its declaration, and the shapes of the
 * services and workers that are handed it (module.ts).
 */
const SEES_RUNTIME = new Set(['runtime.ts', 'module.ts']);

/** Each import of shared/runtime.ts by another file of `shared/`. */
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

  it('only the main.ts entries of services and workers import bin/, and nothing in shared/', () => {
    expect(binViolations()).toEqual([]);
  });

  it('finds an import of bin/ from the core and from a service (the check can fail)', () => {
    // A tree of its own, so the other checks, maybe running meanwhile, never see the probes.
    const top = fs.mkdtempSync(path.join(os.tmpdir(), 'floors-bin-'));
    const put = (rel: string, src: string) => {
      fs.mkdirSync(path.dirname(path.join(top, rel)), { recursive: true });
      fs.writeFileSync(path.join(top, rel), src);
    };
    const importsHost = "export type { RunningProcess } from '../../bin/process.js';\n";
    try {
      put('bin/process.ts', 'export type RunningProcess = object;\n');
      put('shared/domain/probe.ts', importsHost);
      put('services/admin/index.ts', importsHost);
      put('services/admin/main.ts', importsHost);
      put('workers/relay/main.ts', importsHost);
      expect(binViolations(top)).toEqual([
        'shared/domain/probe.ts → bin/process.js',
        'services/admin/index.ts → bin/process.js',
      ]);
    } finally {
      fs.rmSync(top, { recursive: true, force: true });
    }
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

  it('no module of shared/ takes the whole runtime; each declares narrow deps', () => {
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
