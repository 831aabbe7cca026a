import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The import graph reads top-down: services and workers depend on the core (`shared/`), the
 * core on `infra/`, and nothing below imports what is above it. One service or worker never
 * imports another's files (a `main.ts` entry may mount another's module), and only a `main.ts`
 * entry imports `bin/`, the composition root and hosts it runs on (test/infra/floors.test.ts).
 * `npm run cycles` (madge) checks for cycles; this checks the direction.
 */
const root = path.resolve(import.meta.dirname, '../..');
const layers = ['services', 'workers', 'shared', 'infra'] as const;
type Layer = (typeof layers)[number];
const allowed: Record<Layer, Layer[]> = {
  services: ['shared', 'infra'],
  workers: ['shared', 'infra'],
  shared: ['infra'],
  infra: [],
};

function files(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : files(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') && !e.name.endsWith('.d.ts')
      ? [p]
      : [];
  });
}

/** Relative import specifiers of a file (static, re-exports and dynamic). */
function imports(file: string): string[] {
  const src = fs.readFileSync(file, 'utf8');
  const out: string[] = [];
  for (const m of src.matchAll(/(?:from|import)\s*\(?\s*['"](\.[^'"]+)['"]/g)) out.push(m[1]!);
  return out;
}

/** `services/admin/apps.ts` → ['services', 'admin']. */
function place(file: string): [string, string] {
  const [top, unit] = path.relative(root, file).split(path.sep);
  return [top!, unit ?? ''];
}

function violations(): string[] {
  const bad: string[] = [];
  for (const layer of layers)
    for (const file of files(path.join(root, layer))) {
      const [, unit] = place(file);
      for (const spec of imports(file)) {
        const target = path.resolve(path.dirname(file), spec);
        const [tTop, tUnit] = place(target);
        const from = path.relative(root, file);
        const to = path.relative(root, target);
        if (tTop === layer) {
          // A process's entry (`main.ts`) may mount another unit's module.
          const composes =
            path.basename(file) === 'main.ts' && path.basename(target) === 'index.js';
          if ((layer === 'services' || layer === 'workers') && tUnit !== unit && !composes)
            bad.push(`${from} → ${to} (one ${layer.slice(0, -1)} imports another)`);
          continue;
        }
        // An entry (`main.ts`) runs its module on the host (bin/process.ts).
        const entry = layer !== 'shared' && layer !== 'infra' && path.basename(file) === 'main.ts';
        if (tTop === 'bin' && entry) continue;
        if (!(allowed[layer] as string[]).includes(tTop))
          bad.push(
            `${from} → ${to} (${layer} may import ${allowed[layer].join(', ') || 'nothing above it'})`,
          );
      }
    }
  return bad;
}

describe('import layers', () => {
  it('services and workers import the core and infra only; the core only infra; infra nothing above', () => {
    expect(violations()).toEqual([]);
  });

  it('finds an upward import (the check can fail)', () => {
    const probe = path.join(root, 'infra', '__layers_probe.ts');
    fs.writeFileSync(probe, "export { AppError } from '../shared/errors.js';\n");
    try {
      expect(violations()).toEqual([
        'infra/__layers_probe.ts → shared/errors.js (infra may import nothing above it)',
      ]);
    } finally {
      fs.rmSync(probe);
    }
  });
});
