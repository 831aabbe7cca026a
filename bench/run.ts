/**
 * `npm run bench -- <name>`: runs one benchmark (or all with no name) and prints its figures
 * next to the baseline measured in the same run.
 */
const benches: Record<string, () => Promise<void>> = {
  e2e: async () => (await import('./e2e.js')).run(),
  ingress: async () => (await import('./ingress.js')).run(),
  dispatch: async () => (await import('./dispatch.js')).run(),
  widget: async () => (await import('./widget.js')).run(),
  timers: async () => (await import('./timers.js')).run(),
  store: async () => (await import('./store.js')).run(),
  refusal: async () => (await import('./refusal.js')).run(),
};

const name = process.argv[2];
const chosen = name ? [name] : Object.keys(benches);
for (const n of chosen) {
  const b = benches[n];
  if (!b) {
    console.error(`unknown benchmark "${n}"; choose one of: ${Object.keys(benches).join(', ')}`);
    process.exit(2);
  }
  console.log(`\n== bench: ${n} ==`);
  await b();
}
process.exit(0);
