import { describe, expect, it } from 'vitest';
import { generated, loadResults } from '../../bin/results.js';
import { renderBenchmarks, renderHeadline, section, type Results } from '../../bench/report.js';
import { read } from './markdown.js';

/**
 * The figures in README.md and docs/benchmarks.md are the result files': each generated
 * section equals what `npm run results` makes of the committed files.
 */

describe('generated sections', () => {
  const r = loadResults();
  for (const { file, sections } of generated(r))
    for (const [id, content] of Object.entries(sections))
      it(`${file}: results:${id} matches the result files`, () => {
        expect(section(read(file), id), `run \`npm run results\``).toBe(content);
      });
});

describe('a missing result file', () => {
  const none: Results = {
    bench: new Map([
      ['e2e', undefined],
      ['store', undefined],
    ]),
    chaos: new Map([['app-kill', undefined]]),
    chaosAll: ['app-kill'],
  };

  it('gives "not measured yet" rows naming the command, and no figure', () => {
    const headline = renderHeadline(none);
    expect(headline).toContain('not measured yet — run `npm run bench -- e2e`');
    expect(headline).toContain('not measured yet — run `npm run chaos -- all`');
    // The figure column of every row: the command to run, never a number.
    const ours = headline
      .split('\n')
      .slice(2)
      .map((row) => row.split(' | ')[1]);
    expect(ours.length).toBeGreaterThan(0);
    for (const cell of ours) expect(cell).toMatch(/^not measured yet — run `npm run /);
    expect(renderBenchmarks(none)).toContain('not measured yet — run `npm run bench -- store`');
  });
});
