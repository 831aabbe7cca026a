import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { docPages, read, root } from './markdown.js';

/** The README is a door and docs/ is reference: sizes bounded, and no run history by commit. */

const KB = 1024;
const limit = (page: string) => (page === 'README.md' ? 10 * KB : 30 * KB);

describe('page sizes', () => {
  it.each(docPages())('%s is within its limit', (page) => {
    const bytes = fs.statSync(path.join(root, page)).size;
    expect(bytes, `${page}: ${bytes} B, limit ${limit(page)} B`).toBeLessThanOrEqual(limit(page));
  });
});

/** A 7-to-40-digit hex word with a digit and a letter in it: how a commit is named. */
export const COMMIT = /\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b/g;

describe('commit references', () => {
  it('COMMIT finds commit names and nothing else', () => {
    const found = (s: string) => s.match(COMMIT) ?? [];
    expect(found('at 3e1654b and 9b8b6cd')).toEqual(['3e1654b', '9b8b6cd']);
    expect(found('a' + '0'.repeat(39))).toHaveLength(1);
    expect(found('defaced 1234567 sha256 ' + 'ab12'.repeat(16))).toEqual([]);
  });

  it.each(docPages())('%s names no commit', (page) => {
    const hits = read(page)
      .split('\n')
      .flatMap((l, i) => (l.match(COMMIT) ?? []).map((h) => `${page}:${i + 1} ${h}`));
    expect(hits).toEqual([]);
  });
});
