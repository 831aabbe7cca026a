import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { GENERATED, generatedTypes } from '../scripts/generate.js';

describe('the generated types', () => {
  it('are what openapi-typescript makes of the current document (else: npm run sdk:generate)', async () => {
    expect(await readFile(GENERATED, 'utf8')).toBe(await generatedTypes());
  }, 120_000);
});
