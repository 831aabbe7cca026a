import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cacheKey, cachedBuild } from './build-cache.js';

/**
 * The examples' build cache (build-cache.ts) on a package with no dependencies, with the real
 * npm: what the key covers, that a hit skips the build, that a failed build leaves nothing
 * behind, and that a new key replaces the old copy.
 */
let tmp: string;
let example: string;
let root: string;
let builds: string;

async function write(rel: string, text: string) {
  await fs.mkdir(path.dirname(path.join(example, rel)), { recursive: true });
  await fs.writeFile(path.join(example, rel), text);
}

/** A package whose build appends a line to $BUILDS and writes dist/out.txt (exit 1 if told). */
async function writePackage(o: { fail?: boolean } = {}) {
  const build = o.fail
    ? 'node -e "process.exit(1)"'
    : `node -e "const fs=require('fs');fs.appendFileSync(process.env.BUILDS,'b\\n');fs.mkdirSync('dist',{recursive:true});fs.writeFileSync('dist/out.txt','built')"`;
  await write(
    'package.json',
    JSON.stringify({ name: 'shop', version: '1.0.0', scripts: { build } }),
  );
  await write(
    'package-lock.json',
    JSON.stringify({
      name: 'shop',
      version: '1.0.0',
      lockfileVersion: 3,
      requires: true,
      packages: { '': { name: 'shop', version: '1.0.0' } },
    }),
  );
}

const entries = async () => (await fs.readdir(root)).sort();
const buildCount = async () =>
  (await fs.readFile(builds, 'utf8').catch(() => '')).split('\n').filter(Boolean).length;

beforeAll(async () => {
  tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'build-cache-'));
  example = path.join(tmp, 'shop');
  root = path.join(tmp, 'cache');
  builds = path.join(tmp, 'builds.log');
  await writePackage();
  await write('src/app.js', 'export const a = 1;\n');
});
afterAll(async () => {
  await fs.rm(tmp, { recursive: true, force: true });
});

describe('the examples build cache', { timeout: 60_000 }, () => {
  it('keys on the sources and the lockfile, not on the README or what a build writes', async () => {
    const key = await cacheKey(example);
    expect(key).toMatch(/^[0-9a-f]{16}$/);
    await write('README.md', 'How to run it.\n');
    await write('node_modules/x/index.js', 'x');
    await write('dist/out.txt', 'old');
    await write('.next/trace', 'x');
    expect(await cacheKey(example)).toBe(key);
    await write('src/app.js', 'export const a = 2;\n');
    expect(await cacheKey(example)).not.toBe(key);
    await write('src/app.js', 'export const a = 1;\n');
    await write('package-lock.json', '{}');
    expect(await cacheKey(example)).not.toBe(key);
    await writePackage();
    expect(await cacheKey(example)).toBe(key);
    await fs.rm(path.join(example, 'dist'), { recursive: true });
  });

  it('builds on a miss, into <name>-<key>, and a hit skips install and build', async () => {
    const env = { BUILDS: builds };
    const first = await cachedBuild(example, { root, env });
    expect(first).toMatchObject({
      hit: false,
      dir: path.join(root, `shop-${await cacheKey(example)}`),
    });
    expect(await fs.readFile(path.join(first.dir, 'dist/out.txt'), 'utf8')).toBe('built');
    expect(await fs.readFile(path.join(first.dir, 'src/app.js'), 'utf8')).toBe(
      'export const a = 1;\n',
    );
    // Only the sources were copied: not the example's own node_modules.
    await expect(fs.access(path.join(first.dir, 'node_modules/x'))).rejects.toThrow();
    expect(await buildCount()).toBe(1);

    const second = await cachedBuild(example, { root, env });
    expect(second).toMatchObject({ hit: true, dir: first.dir });
    expect(await buildCount()).toBe(1);
    expect(await entries()).toEqual([path.basename(first.dir)]);
  });

  it('a failed build leaves no copy and no temporary directory', async () => {
    await writePackage({ fail: true });
    await expect(cachedBuild(example, { root, env: { BUILDS: builds } })).rejects.toThrow(
      /npm run build .* exited 1/,
    );
    // Only the earlier good copy: the failed key is still a miss next time.
    expect(await entries()).toHaveLength(1);
    expect((await entries())[0]).not.toBe(`shop-${await cacheKey(example)}`);
  });

  it('a new key replaces the older copy of the example once it is built', async () => {
    const old = await entries();
    await writePackage();
    await write('src/app.js', 'export const a = 3;\n');
    const next = await cachedBuild(example, { root, env: { BUILDS: builds } });
    expect(next.hit).toBe(false);
    expect(await entries()).toEqual([path.basename(next.dir)]);
    expect(old).not.toContain(path.basename(next.dir));
  });
});
