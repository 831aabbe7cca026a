import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { ResultFile } from '../bench/record.js';
import {
  renderBenchmarks,
  renderChaos,
  renderHeadline,
  replaceSection,
  type Results,
} from '../bench/report.js';
import { benchNames } from '../bench/run.js';
import { allScenarios } from '../test/chaos/run.js';

/**
 * `npm run results`: rewrites the generated sections of README.md and docs/benchmarks.md from
 * the newest result files (bench/results/, test/chaos/results/). `--check` writes nothing and
 * exits 1 when a section differs from what the files give.
 */
export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function read(dir: string, name: string): ResultFile | undefined {
  const file = path.join(root, dir, `${name}.json`);
  return fs.existsSync(file)
    ? (JSON.parse(fs.readFileSync(file, 'utf8')) as ResultFile)
    : undefined;
}

export function loadResults(): Results {
  return {
    bench: new Map(benchNames.map((b) => [b, read('bench/results', b)])),
    chaos: new Map(allScenarios.map((s) => [s, read('test/chaos/results', s)])),
    chaosAll: allScenarios,
  };
}

/** Each generated document: its path and its sections' ids with their content. */
export function generated(r: Results): { file: string; sections: Record<string, string> }[] {
  return [
    { file: 'README.md', sections: { headline: renderHeadline(r) } },
    {
      file: 'docs/benchmarks.md',
      sections: { bench: renderBenchmarks(r), chaos: renderChaos(r) },
    },
  ];
}

function main(check: boolean): number {
  let stale = 0;
  for (const { file, sections } of generated(loadResults())) {
    const at = path.join(root, file);
    const before = fs.readFileSync(at, 'utf8');
    let after = before;
    for (const [id, content] of Object.entries(sections))
      after = replaceSection(after, id, content);
    if (after === before) continue;
    stale++;
    if (check) console.error(`${file}: generated sections differ from the result files`);
    else {
      fs.writeFileSync(at, after);
      console.log(`${file}: updated`);
    }
  }
  if (check && stale) console.error('run `npm run results` and commit the result');
  return check && stale ? 1 : 0;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href)
  process.exit(main(process.argv.includes('--check')));
