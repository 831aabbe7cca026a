import { parseArgs } from 'node:util';
import { readDeadLetters, redriveDeadLetters, type DeadLetter } from '../shared/bus/dlq.js';
import { ConfigError, loadConfig } from '../shared/config.js';
import { createLogger } from '../shared/logger.js';
import { resolveInfra } from './process.js';
import { createRuntime } from './compose.js';
import { StackError } from '../infra/local/errors.js';

const usage = `usage: npm run dlq -- list [--json]
       npm run dlq -- redrive [--code=SVC_…] [--dry-run]

list     prints every message in the dead-letter topic: where it came from, why, and whether
         it was redriven already
redrive  re-publishes the messages not yet redriven to the topics they came from`;

function line(d: DeadLetter): string {
  const value = d.value.length > 160 ? `${d.value.slice(0, 160)}…` : d.value;
  return [
    `${d.partition}/${d.offset}${d.redriven ? ' (redriven)' : ''}`,
    `from ${d.source.topic}[${d.source.partition}]@${d.source.offset} group ${d.source.group}`,
    `${d.code}: ${d.reason}`,
    `  ${value}`,
  ].join('  ');
}

async function run(): Promise<number> {
  const { values, positionals } = parseArgs({
    args: process.argv.slice(2),
    options: {
      json: { type: 'boolean', default: false },
      code: { type: 'string' },
      'dry-run': { type: 'boolean', default: false },
    },
    allowPositionals: true,
    strict: true,
  });
  const cmd = positionals[0];
  if (cmd !== 'list' && cmd !== 'redrive') {
    process.stderr.write(`${usage}\n`);
    return 2;
  }
  const base = loadConfig();
  const log = createLogger({ level: 'warn', name: 'dlq', toStderr: true });
  const { config, stack } = await resolveInfra(base, log);
  const rt = createRuntime(config, log);
  try {
    const o = { topic: rt.topics.deadLetter, prefix: config.TOPIC_PREFIX };
    if (cmd === 'list' || values['dry-run']) {
      const all = await readDeadLetters(rt.kafka, o);
      if (values.json) for (const d of all) process.stdout.write(`${JSON.stringify(d)}\n`);
      else {
        for (const d of all) process.stdout.write(`${line(d)}\n`);
        const open = all.filter((d) => !d.redriven).length;
        process.stdout.write(`${all.length} dead-lettered, ${open} not redriven\n`);
      }
      return 0;
    }
    const { redriven, skipped } = await redriveDeadLetters(rt.kafka, rt.producer, {
      ...o,
      code: values.code,
    });
    for (const d of redriven) process.stdout.write(`redriven ${line(d)}\n`);
    process.stdout.write(`${redriven.length} redriven, ${skipped.length} left\n`);
    return 0;
  } finally {
    await rt.close();
    await stack?.stop();
  }
}

run().then(
  (code) => process.exit(code),
  (err: unknown) => {
    const known = err instanceof ConfigError || err instanceof StackError;
    process.stderr.write(`error: ${known ? (err as Error).message : String(err)}\n`);
    process.exit(1);
  },
);
