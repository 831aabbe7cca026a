import { parseArgs } from 'node:util';

/**
 * The command line of the offline verifiers (bin/ledger-verify.ts, bin/receipt-verify.ts): one
 * file, `--keys <svc-keys.json or URL>` and `--json`. Undefined (after
 * printing the usage to stderr) when the command line is not that; the caller exits 2.
 */
export function verifierArgs(
  usage: string,
): { file: string; keys: string; json: boolean } | undefined {
  let parsed;
  try {
    parsed = parseArgs({
      allowPositionals: true,
      options: {
        keys: { type: 'string' },
        json: { type: 'boolean', default: false },
      },
    });
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${usage}\n`);
    return undefined;
  }
  const [file, ...more] = parsed.positionals;
  const keys = parsed.values.keys;
  if (!file || more.length > 0 || typeof keys !== 'string' || keys === '') {
    process.stderr.write(`${usage}\n`);
    return undefined;
  }
  return { file, keys, json: parsed.values.json === true };
}
