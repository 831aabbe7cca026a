import fs from 'node:fs';
import path from 'node:path';
import type { Express } from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allServices } from '../../bin/modules.js';
import { appServedBy } from '../../shared/http/server.js';
import { testProcess } from '../helpers/stack.js';
import { typeErrors } from '../helpers/typecheck.js';
import { anchors, codeBlocks, docPages, external, links, read, root, slug } from './markdown.js';

/**
 * The docs' links resolve: every relative link and #anchor in README.md and docs/*.md names a
 * file that exists and a heading it has. And every `curl` of the README and its widget tag name
 * a route the service serves, read from the Express app that every service of `npm start`
 * mounts (started in-process, as test/foundation/route-docs.test.ts does).
 */

describe('slug', () => {
  it.each([
    ['Verifying a webhook in your server', 'verifying-a-webhook-in-your-server'],
    [
      'Group commit linger (`OUTBOX_GROUP_LINGER_MS`)',
      'group-commit-linger-outbox_group_linger_ms',
    ],
    ['Idempotency, rate limits and isolation', 'idempotency-rate-limits-and-isolation'],
    ['E-mails', 'e-mails'],
    ['`e2e`: POST → signed webhook', 'e2e-post--signed-webhook'],
  ])('%s → %s', (heading, expected) => {
    expect(slug(heading)).toBe(expected);
  });
});

/** `file#anchor` of every broken link, from one page's links. */
function broken(page: string): string[] {
  const out: string[] = [];
  for (const { line, target } of links(read(page))) {
    if (external(target)) continue;
    const [file, anchor] = target.split('#') as [string, string | undefined];
    const resolved = file === '' ? page : path.normalize(path.join(path.dirname(page), file));
    const where = `${page}:${line} → ${target}`;
    if (!fs.existsSync(path.join(root, resolved))) {
      out.push(`${where}: no file ${resolved}`);
      continue;
    }
    if (anchor !== undefined && resolved.endsWith('.md') && !anchors(read(resolved)).has(anchor))
      out.push(`${where}: no heading #${anchor} in ${resolved}`);
  }
  return out;
}

describe('links in README.md and docs/', () => {
  it.each(docPages())('%s: every relative link and anchor resolves', (page) => {
    expect(broken(page)).toEqual([]);
  });
});

interface Layer {
  rawPath?: string | RegExp | (string | RegExp)[];
  route?: { path: string | RegExp | (string | RegExp)[]; methods: Record<string, boolean> };
  handle: { stack?: Layer[] };
}
const list = <T>(x: T | T[]): T[] => (Array.isArray(x) ? x : [x]);
const join = (base: string, p: string) =>
  `${base}${p === '/' ? '' : p}`.replace(/\/{2,}/g, '/') || '/';

/** `METHOD` and a matcher for every route handler of the app, nested routers included. */
function served(stack: Layer[], base = ''): { method: string; path: string; re: RegExp }[] {
  const out: { method: string; path: string; re: RegExp }[] = [];
  for (const layer of stack) {
    if (layer.route) {
      for (const p of list(layer.route.path)) {
        if (p instanceof RegExp) continue;
        const full = join(base, p);
        const re = new RegExp(`^${full.replace(/:\w+/g, '[^/]+')}/?$`);
        for (const m of Object.keys(layer.route.methods))
          out.push({ method: m.toUpperCase(), path: full, re });
      }
    } else if (Array.isArray(layer.handle.stack)) {
      for (const p of list(layer.rawPath ?? '/'))
        if (typeof p === 'string') out.push(...served(layer.handle.stack, join(base, p)));
    }
  }
  return out;
}

/** Each `curl` of the README's shell blocks: its method and path (variables as one segment). */
export function curls(md: string): { method: string; path: string; command: string }[] {
  const out: { method: string; path: string; command: string }[] = [];
  for (const block of codeBlocks(md, 'sh')) {
    const commands = block.replace(/\\\n/g, ' ').split('\n');
    for (const command of commands) {
      if (!/\bcurl\b/.test(command)) continue;
      const url = /(?:\$BASE|localhost:8080)(\/[^\s"'?]*)/.exec(command);
      if (!url) throw new Error(`a curl without the service's URL: ${command}`);
      const method =
        /\s-X\s+([A-Z]+)/.exec(command)?.[1] ?? (/\s(-d|--data)\s/.test(command) ? 'POST' : 'GET');
      out.push({ method, path: url[1]!.replace(/\$\{?\w+\}?/g, 'x'), command });
    }
  }
  return out;
}

describe('the README walk-through against the routes the service serves', () => {
  type Running = Awaited<ReturnType<typeof testProcess>>;
  let p: Running;
  let routes: ReturnType<typeof served>;
  const readme = read('README.md');

  beforeAll(async () => {
    p = await testProcess('docs-links', allServices);
    const app = appServedBy(p.server) as Express & { router: { stack: Layer[] } };
    routes = served(app.router.stack);
  });
  afterAll(async () => {
    await p?.close();
  });

  const found = curls(readme);
  it('finds the walk-through', () => {
    expect(found.length).toBeGreaterThanOrEqual(6);
  });

  it("the walk-through's and the SDK README's TypeScript type-checks against the SDK", () => {
    const blocks = [readme, read('clients/typescript/README.md')].flatMap((md, n) =>
      codeBlocks(md, 'ts').map((text, i) => ({ name: `readme-${n}-${i}`, text })),
    );
    expect(blocks.some((b) => b.text.includes("from '@svc-consent/sdk'"))).toBe(true);
    expect(typeErrors(blocks)).toEqual([]);
  }, 60_000);

  it.each(found.map((c) => [`${c.method} ${c.path}`, c] as const))('%s is served', (_k, c) => {
    const match = routes.filter((r) => r.method === c.method && r.re.test(c.path));
    expect(match, c.command).not.toEqual([]);
  });

  it('the widget tag loads the widget script', async () => {
    const tags = [...readme.matchAll(/<script[^>]*\ssrc="http:\/\/localhost:8080(\/[^"]+)"/g)];
    expect(tags.length).toBeGreaterThan(0);
    for (const [, src] of tags) {
      const r = await fetch(`${p.url}${src}`);
      expect(r.status, src).toBe(200);
      expect(r.headers.get('content-type')).toMatch(/javascript/);
    }
  });
});
