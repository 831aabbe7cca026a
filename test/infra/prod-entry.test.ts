import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { projectRoot } from '../../infra/local/paths.js';

/**
 * The production entry (`bin/serve.ts`, run by `npm run start:prod` as `dist/bin/serve.js`)
 * must not load the embedded stack: no module it reaches may be one of `infra/local/` but its
 * pure helpers. Read from the sources, without running anything: every import and re-export
 * that survives compilation (with verbatimModuleSyntax only a whole `import type` /
 * `export type` is erased; `import { type X }` still loads its module) and every `import()`.
 */

const PROD_ENTRY = 'bin/serve.ts';
/** Pure helpers of infra/local/ that the running code may use. */
const ALLOWED_LOCAL = new Set(['infra/local/errors.ts', 'infra/local/paths.ts']);
/** Modules that start the embedded stack: infra/local/ but its helpers, and bin/process.ts. */
const embedded = (file: string) =>
  (file.startsWith('infra/local/') && !ALLOWED_LOCAL.has(file)) || file === 'bin/process.ts';

const rel = (file: string) => path.relative(projectRoot, file).split(path.sep).join('/');

/** The project files a module loads when run; an `import()` of a computed name is an error. */
function loads(file: string): string[] {
  const src = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest);
  const specifiers: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && !node.importClause?.isTypeOnly)
      specifiers.push((node.moduleSpecifier as ts.StringLiteral).text);
    else if (ts.isExportDeclaration(node) && node.moduleSpecifier && !node.isTypeOnly)
      specifiers.push((node.moduleSpecifier as ts.StringLiteral).text);
    else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const arg = node.arguments[0];
      if (!arg || !ts.isStringLiteralLike(arg))
        throw new Error(`${rel(file)}: import() of a computed name cannot be checked`);
      specifiers.push(arg.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(src);
  return specifiers
    .filter((s) => s.startsWith('.'))
    .map((s) => {
      const target = path.resolve(path.dirname(file), s);
      const candidates = [target.replace(/\.js$/, '.ts'), target];
      const found = candidates.find((c) => fs.existsSync(c) && fs.statSync(c).isFile());
      if (!found) throw new Error(`${rel(file)}: cannot resolve ${s}`);
      return found;
    });
}

/** Every project module reachable from `entry`, each with the chain of imports that reaches it. */
function reachable(entry: string): Map<string, string[]> {
  const start = path.join(projectRoot, entry);
  const via = new Map<string, string[]>([[rel(start), [rel(start)]]]);
  const queue = [start];
  for (let file = queue.shift(); file; file = queue.shift()) {
    const chain = via.get(rel(file))!;
    for (const dep of loads(file)) {
      if (via.has(rel(dep))) continue;
      via.set(rel(dep), [...chain, rel(dep)]);
      if (/\.[cm]?ts$/.test(dep)) queue.push(dep);
    }
  }
  return via;
}

/** The embedded-stack modules `entry` reaches, each as its chain of imports. */
function embeddedReached(entry: string): string[] {
  return [...reachable(entry)]
    .filter(([file]) => embedded(file))
    .map(([, chain]) => chain.join(' -> '));
}

describe('the production entry', () => {
  it(`${PROD_ENTRY} reaches no module of the embedded stack`, () => {
    const graph = reachable(PROD_ENTRY);
    // It does reach the whole service (the walk is not cut short).
    const modules = [
      'bin/host.ts',
      'bin/compose.ts',
      'bin/modules.ts',
      'workers/dispatcher/index.ts',
    ];
    for (const m of modules) expect(graph.has(m), m).toBe(true);
    expect(embeddedReached(PROD_ENTRY)).toEqual([]);
  });

  it('the check sees the embedded stack where it is: npm start reaches it', () => {
    const found = embeddedReached('bin/start.ts');
    expect(found).toContainEqual(expect.stringMatching(/-> infra\/local\/stack\.ts$/));
    expect(found).toContainEqual(expect.stringMatching(/-> infra\/local\/kafka\.ts$/));
  });

  it('package.json runs the built production entry', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(projectRoot, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    // `exec`: npm's shell is replaced, so a signal sent to npm reaches the process.
    expect(pkg.scripts['start:prod']).toBe(`exec node dist/${PROD_ENTRY.replace(/\.ts$/, '.js')}`);
  });
});
