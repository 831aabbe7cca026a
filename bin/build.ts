import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';
import { projectRoot } from '../infra/local/paths.js';

/**
 * `npm run build`: the production build. Every source file of the running code (bin, shared,
 * services, workers, infra; not tests, benchmarks or browser scripts) is transpiled to
 * JavaScript one for one, keeping the folder layout, so `node dist/bin/serve.js` (the
 * production entry, `npm run start:prod`) runs without tsx; the files the services read at run
 * time (the widget scripts, the portal's and the console's assets, the embedded stack's Java launcher and Maven
 * file, which the built `bin/start.js` still uses) are copied beside them. No bundling: module
 * paths and `import.meta.url` lookups stay as they are in the sources.
 *
 * `--outdir=DIR` (default `dist`).
 */
const { values } = parseArgs({
  args: process.argv.slice(2),
  options: { outdir: { type: 'string', default: 'dist' } },
  strict: true,
});
const outdir = path.resolve(projectRoot, values.outdir);
const SOURCES = ['bin', 'shared', 'services', 'workers', 'infra'];
const ASSETS = [
  'widget',
  'services/portal/assets',
  'services/console/assets',
  'infra/local/java',
  'infra/local/pom.xml',
];
/** Asset folders hold browser TypeScript the services transpile when they mount. */
const ASSET_DIRS = ASSETS.map((a) => path.join(projectRoot, a));

function tsFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return ASSET_DIRS.includes(p) ? [] : tsFiles(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') && !e.name.endsWith('.d.ts')
      ? [p]
      : [];
  });
}

const t0 = Date.now();
fs.rmSync(outdir, { recursive: true, force: true });
const entryPoints = SOURCES.flatMap((d) => tsFiles(path.join(projectRoot, d)));
await build({
  entryPoints,
  outdir,
  outbase: projectRoot,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: true,
  logLevel: 'warning',
});
for (const a of ASSETS)
  fs.cpSync(path.join(projectRoot, a), path.join(outdir, a), { recursive: true });
process.stdout.write(
  `built ${entryPoints.length} modules and ${ASSETS.length} asset paths into ${path.relative(process.cwd(), outdir) || '.'} in ${Date.now() - t0} ms; run: node ${path.relative(process.cwd(), path.join(outdir, 'bin', 'serve.js'))}\n`,
);
