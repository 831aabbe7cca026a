import fs from 'node:fs/promises';
import { transform } from 'esbuild';

export type PageAssets<N extends string> = Record<`${N}.js` | `${N}.css` | 'favicon.svg', string>;

/**
 * A server-rendered page's assets from `<dir>/assets/`: `<name>.ts` transpiled to a script
 * (written in TypeScript, type-checked and linted with the rest; no bundling, it imports
 * nothing), `<name>.css` and `favicon.svg`. Called when a service is mounted, never at import;
 * the caller keeps them in memory.
 */
export async function loadPageAssets<N extends string>(dir: URL, name: N): Promise<PageAssets<N>> {
  const read = (file: string) => fs.readFile(new URL(`./assets/${file}`, dir), 'utf8');
  const script = await transform(await read(`${name}.ts`), {
    loader: 'ts',
    format: 'iife',
    target: 'es2020',
    legalComments: 'none',
  });
  return {
    [`${name}.js`]: script.code,
    [`${name}.css`]: await read(`${name}.css`),
    'favicon.svg': await read('favicon.svg'),
  } as PageAssets<N>;
}
