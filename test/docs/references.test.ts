import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { baseConfigSchema } from '../../shared/config.js';
import { tuningNames } from '../../shared/tuning.js';
import { docPages, read, root } from './markdown.js';

/**
 * What README.md and docs/*.md name exists: every UPPER_SNAKE name (a setting, a fixed value, a
 * constant, an error code) and every camelCase name in backticks is one the code itself uses
 * (in an identifier, a string or a regular expression, not in a comment), and every repository
 * path is a file or folder of the repository. CHANGELOG.md is history and not checked; nor are
 * the sections `npm run results` generates (results.test.ts checks those).
 */

/** The repository's files (tracked, or new and not ignored) that are still on disk. */
function repositoryFiles(): string[] {
  const out = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], {
    cwd: root,
    encoding: 'utf8',
  });
  return out.split('\n').filter((f) => f !== '' && fs.existsSync(path.join(root, f)));
}

const THIS_FILE = 'test/docs/references.test.ts';
/** Records of past runs: they keep the settings a run had, which may be gone since. */
const RECORDS = /^(bench\/results|test\/chaos\/results)\//;
const SCRIPT = /\.(ts|mts|cts|js|mjs|cjs)$/;
const TEXT = /\.(json|ya?ml|html|css|java|xml|sh)$|^\.ci\//;

/** Names of other systems that the docs cite: a Kafka protocol error. */
const EXTERNAL = ['OUT_OF_ORDER_SEQUENCE_NUMBER'];

const WORD = /[A-Za-z_][A-Za-z0-9_]*/g;
const UPPER_SNAKE = /(?<![\w$.-])[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+(?!\w)/g;
/** A backticked camelCase name, alone or called: `impliedFields`, `loadConfig()`. */
const CAMEL = /`([a-z][a-z0-9]*[A-Z][A-Za-z0-9]*)(?:\(\))?`/g;

/** The text of every identifier, string and regular expression of a script (not its comments). */
function codeTexts(file: string, text: string): string[] {
  const out: string[] = [];
  const visit = (node: ts.Node) => {
    if (
      ts.isIdentifier(node) ||
      ts.isPrivateIdentifier(node) ||
      ts.isStringLiteralLike(node) ||
      ts.isTemplateLiteralToken(node) ||
      ts.isRegularExpressionLiteral(node)
    )
      out.push(node.text);
    ts.forEachChild(node, visit);
  };
  visit(ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false));
  return out;
}

interface Known {
  /** The words of the code's identifiers, strings and regular expressions, and of its data files. */
  words: Set<string>;
  /** Repository files, and every folder that holds one. */
  files: Set<string>;
  folders: Set<string>;
}

function knownInRepository(): Known {
  const files = repositoryFiles();
  const words = new Set<string>(EXTERNAL);
  for (const file of files) {
    if (file === THIS_FILE || RECORDS.test(file)) continue;
    if (!SCRIPT.test(file) && !TEXT.test(file)) continue;
    const text = fs.readFileSync(path.join(root, file), 'utf8');
    const texts = SCRIPT.test(file) ? codeTexts(file, text) : [text];
    for (const t of texts) for (const w of t.match(WORD) ?? []) words.add(w);
  }
  const folders = new Set<string>();
  for (const f of files) {
    const parts = f.split('/');
    for (let i = 1; i < parts.length; i++) folders.add(parts.slice(0, i).join('/'));
  }
  return { words, files: new Set(files), folders };
}

/** The text outside the generated sections (each of their lines left empty). */
const withoutGenerated = (md: string) =>
  md.replace(/<!-- results:[\w-]+:start -->[\s\S]*?<!-- results:[\w-]+:end -->/g, (m) =>
    m.replace(/[^\n]/g, ''),
  );

/** A path segment's characters, and its placeholders: `<name>`, `{id}`, `*`, `…`. */
const SEGMENT = String.raw`(?:[\w.@-]|<[a-z-]+>|\{[A-Za-z]+\}|\*|…)`;

/** What a path names, as a pattern when it has placeholders. */
function pathPattern(p: string): RegExp | undefined {
  if (!/<[a-z-]+>|\{[A-Za-z]+\}|\*|…/.test(p)) return undefined;
  const source = p
    .split(/(<[a-z-]+>|\{[A-Za-z]+\}|\*|…)/)
    .map((part, i) => (i % 2 === 1 ? '[^/]+' : part.replace(/[.+?^$()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${source}$`);
}

/**
 * What one page names that does not exist, as `page:line kind name`. Names the page uses as
 * shell variables (`$NAME`) are its own. `tops` are the repository's top-level folders a path
 * may start with.
 */
function unresolved(page: string, md: string, known: Known, tops: string[]): string[] {
  const text = withoutGenerated(md);
  const shell = new Set([...text.matchAll(/\$\{?([A-Z][A-Z0-9_]*)/g)].map((m) => m[1]!));
  const pathRe = new RegExp(
    String.raw`(?<![\w./-])((?:${tops.map((t) => t.replace(/\./g, '\\.')).join('|')})/(?:${SEGMENT}|/)*)`,
    'g',
  );
  const out: string[] = [];
  text.split('\n').forEach((line, i) => {
    const at = `${page}:${i + 1}`;
    for (const m of line.matchAll(UPPER_SNAKE))
      if (!known.words.has(m[0]) && !shell.has(m[0])) out.push(`${at} name ${m[0]}`);
    for (const m of line.matchAll(CAMEL))
      if (!known.words.has(m[1]!)) out.push(`${at} code ${m[1]}`);
    for (const m of line.matchAll(pathRe)) {
      const p = m[1]!.replace(/[.]+$/, '');
      const bare = p.replace(/\/$/, '');
      const pattern = pathPattern(bare);
      const exists = pattern
        ? [...known.files, ...known.folders].some((f) => pattern.test(f))
        : known.files.has(bare) || known.folders.has(bare);
      if (!exists) out.push(`${at} path ${p}`);
    }
  });
  return out;
}

describe('names and paths in README.md and docs/', () => {
  const known = knownInRepository();
  const tops = [...known.folders].filter((f) => !f.includes('/'));

  it('finds a setting, a function and a path that do not exist', () => {
    const fake = [
      'Set `LEDGER_FOO_BAR_MS` (see `shared/storage/ledger/nowhere.ts` and `workers/gone/`);',
      'a run writes `test/chaos/nothing/<scenario>.json` through `writeNothingTwice()`.',
      '`TIMER_SHARDS` (`shared/timers/settings.ts`), `LEDGER_CHECKPOINT_LAG_MS`, `SVC_ROLE`,',
      '`bench/results/<name>.json`, `workers/dispatcher/`, shell `$MY_VAR`, `impliedFields`.',
    ].join('\n');
    expect(unresolved('fake.md', fake, known, tops)).toEqual([
      'fake.md:1 name LEDGER_FOO_BAR_MS',
      'fake.md:1 path shared/storage/ledger/nowhere.ts',
      'fake.md:1 path workers/gone/',
      'fake.md:2 code writeNothingTwice',
      'fake.md:2 path test/chaos/nothing/<scenario>.json',
    ]);
  });

  it("takes every setting, fixed value and the launcher's names for existing", () => {
    const names = [...Object.keys(baseConfigSchema.shape), ...tuningNames, 'SVC_ROLE', 'SVC_HOME'];
    expect(names.filter((n) => !known.words.has(n))).toEqual([]);
  });

  it.each(docPages())('%s names only what exists', (page) => {
    expect(unresolved(page, read(page), known, tops)).toEqual([]);
  });
});
