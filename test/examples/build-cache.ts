import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/**
 * Installed and built copies of the framework examples, kept outside the checkout so that a
 * fresh clone on the same machine reuses them: `<root>/<name>-<key>`, the key a hash of the
 * example's own files (lockfile included) and the Node version. A copy is built in a temporary
 * directory and renamed into place only once `npm ci` and `npm run build` both succeeded, so a
 * half build never counts as a hit.
 */

/** `$XDG_CACHE_HOME/svc-consent/examples`, else `~/.cache/svc-consent/examples`. */
export const CACHE_ROOT = path.join(
  process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'),
  'svc-consent',
  'examples',
);

/** What installing and building writes into an example: never part of its key. */
const GENERATED = new Set(['node_modules', 'dist', '.next', '.nuxt', '.output', '.angular']);

/** The example's files that go into its build (not its README), relative to it, sorted. */
export async function sourceFiles(dir: string): Promise<string[]> {
  const files: string[] = [];
  for (const e of await fs.readdir(dir, { withFileTypes: true })) {
    if (e.isFile() && !e.name.endsWith('.md')) files.push(e.name);
    else if (e.isDirectory() && !GENERATED.has(e.name)) {
      const inner = await fs.readdir(path.join(dir, e.name), {
        recursive: true,
        withFileTypes: true,
      });
      for (const f of inner)
        if (f.isFile()) files.push(path.relative(dir, path.join(f.parentPath, f.name)));
    }
  }
  return files.sort();
}

/** The cache key: every source file's path and content, and the Node version that builds it. */
export async function cacheKey(dir: string): Promise<string> {
  const h = createHash('sha256').update(`${process.version}\0`);
  for (const f of await sourceFiles(dir)) {
    h.update(`${f}\0`)
      .update(await fs.readFile(path.join(dir, f)))
      .update('\0');
  }
  return h.digest('hex').slice(0, 16);
}

export interface Built {
  /** The installed, built copy to run the example from. */
  dir: string;
  hit: boolean;
  seconds: number;
}

/**
 * The built copy of the example in `exampleDir`: the cached one, or a new one made with
 * `npm ci --no-audit --no-fund --prefer-offline` and `npm run build`, on the Node running this.
 */
export async function cachedBuild(
  exampleDir: string,
  o: { root?: string; env?: Record<string, string> } = {},
): Promise<Built> {
  const started = Date.now();
  const root = o.root ?? CACHE_ROOT;
  const name = path.basename(exampleDir);
  const dir = path.join(root, `${name}-${await cacheKey(exampleDir)}`);
  const done = (hit: boolean): Built => {
    const seconds = (Date.now() - started) / 1000;
    console.log(`examples/${name}: build cache ${hit ? 'hit' : 'miss'}, ${seconds.toFixed(1)} s`);
    return { dir, hit, seconds };
  };
  if (await exists(dir)) return done(true);

  await fs.mkdir(root, { recursive: true });
  await removeAbandoned(root, name);
  const tmp = path.join(root, `.tmp-${name}-${process.pid}-${randomBytes(4).toString('hex')}`);
  try {
    for (const f of await sourceFiles(exampleDir)) {
      await fs.mkdir(path.dirname(path.join(tmp, f)), { recursive: true });
      await fs.copyFile(path.join(exampleDir, f), path.join(tmp, f));
    }
    const env = { ...process.env, ...o.env };
    await run(tmp, ['ci', '--no-audit', '--no-fund', '--prefer-offline'], env);
    await run(tmp, ['run', 'build'], env);
    await fs.rename(tmp, dir);
  } catch (err) {
    await fs.rm(tmp, { recursive: true, force: true });
    // Another run built the same key first: use its copy.
    if (!(await exists(dir))) throw err;
    return done(true);
  }
  // Older keys of this example are stale now.
  for (const e of await fs.readdir(root)) {
    if (e.startsWith(`${name}-`) && path.join(root, e) !== dir)
      await fs.rm(path.join(root, e), { recursive: true, force: true });
  }
  return done(false);
}

/** `npm <args>` in `cwd` with the Node running this first on PATH; throws with its output. */
function run(cwd: string, args: string[], env: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('npm', args, {
      cwd,
      env: { ...env, PATH: `${path.dirname(process.execPath)}${path.delimiter}${env.PATH ?? ''}` },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d));
    child.stderr.on('data', (d: Buffer) => (out += d));
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0
        ? resolve()
        : reject(new Error(`npm ${args.join(' ')} in ${cwd} exited ${code}:\n${out.slice(-4000)}`)),
    );
  });
}

/** Temporary directories of this example left by runs whose process is gone. */
async function removeAbandoned(root: string, name: string): Promise<void> {
  for (const e of await fs.readdir(root)) {
    const m = new RegExp(`^\\.tmp-${name}-(\\d+)-`).exec(e);
    if (m && !alive(Number(m[1])))
      await fs.rm(path.join(root, e), { recursive: true, force: true });
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function exists(p: string): Promise<boolean> {
  return fs.access(p).then(
    () => true,
    () => false,
  );
}
