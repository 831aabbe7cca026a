import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  commit,
  envSettings,
  machine,
  reproduce,
  writeResult,
  type BenchOutcome,
} from './record.js';

/**
 * `npm run bench -- <name>`: runs one benchmark (or all with no name), prints its figures next
 * to the baseline measured in the same run, and writes them to bench/results/<name>.json.
 */
const benches: Record<string, () => Promise<BenchOutcome>> = {
  e2e: async () => (await import('./e2e.js')).run(),
  ingress: async () => (await import('./ingress.js')).run(),
  dispatch: async () => (await import('./dispatch.js')).run(),
  widget: async () => (await import('./widget.js')).run(),
  timers: async () => (await import('./timers.js')).run(),
  store: async () => (await import('./store.js')).run(),
  refusal: async () => (await import('./refusal.js')).run(),
  ordering: async () => (await import('./ordering.js')).run(),
};

export const benchNames = Object.keys(benches);
export const resultsDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'results');

async function main(name: string | undefined): Promise<void> {
  const chosen = name ? [name] : benchNames;
  for (const n of chosen) {
    const b = benches[n];
    if (!b) {
      console.error(`unknown benchmark "${n}"; choose one of: ${benchNames.join(', ')}`);
      process.exit(2);
    }
    console.log(`\n== bench: ${n} ==`);
    const outcome = await b();
    const to = writeResult(resultsDir, {
      kind: 'bench',
      name: n,
      command: reproduce(`npm run bench -- ${n}`),
      date: new Date().toISOString(),
      commit: commit(),
      machine: machine(),
      settings: { ...envSettings(), ...outcome.settings },
      figures: outcome.figures,
      ...(outcome.baseline === undefined ? {} : { baseline: outcome.baseline }),
    });
    console.log(`result: ${path.relative(process.cwd(), to)}`);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await main(process.argv[2]);
  process.exit(0);
}
