import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { baseConfigSchema } from '../shared/config.js';

/**
 * A benchmark's or a fault run's result as data: one JSON file per name, the latest run's
 * (earlier runs live in git history). `npm run results` builds the docs' tables from them.
 */
export interface ResultFile {
  kind: 'bench' | 'chaos';
  name: string;
  /** The command that reproduces the run. */
  command: string;
  /** When the run ended (ISO 8601, UTC). */
  date: string;
  commit: { sha: string; dirty: boolean } | null;
  machine: Machine;
  /** The environment and options that shaped the run (secrets left out). */
  settings: Record<string, string | number | boolean>;
  /** Whether the run met its own pass criteria (a fault scenario); absent for a bench. */
  passed?: boolean;
  figures: unknown;
  /** What the figures are set against, measured in the same run. */
  baseline?: unknown;
}

export interface Machine {
  cpus: number;
  model: string;
  memoryBytes: number;
  node: string;
  os: string;
}

/** What one bench's `run()` hands back; the caller adds the rest of the file. */
export interface BenchOutcome {
  figures: unknown;
  baseline?: unknown;
  /** The bench's own knobs as they were this run (counts, rates, durations). */
  settings?: Record<string, string | number | boolean>;
}

export function machine(): Machine {
  return {
    cpus: os.availableParallelism(),
    model: os.cpus()[0]?.model.trim() ?? 'unknown',
    memoryBytes: os.totalmem(),
    node: process.version,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
  };
}

/** HEAD and whether the work tree differs from it; null outside a git checkout. */
export function commit(cwd = process.cwd()): ResultFile['commit'] {
  try {
    const git = (...args: string[]) =>
      execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    const sha = git('rev-parse', 'HEAD').trim();
    // Result files are a run's output and node_modules a link: neither makes a run dirty.
    const outputs = ['bench/results', 'test/chaos/results', 'node_modules'];
    const status = git('status', '--porcelain', '--', '.', ...outputs.map((o) => `:!${o}`));
    return { sha, dirty: status.trim() !== '' };
  } catch {
    return null;
  }
}

const SECRET = /TOKEN|SECRET|PASSWORD|KEY/;

/**
 * The environment that shapes a run: every `BENCH_*` and `CHAOS_*` variable and every service
 * setting the config schema knows, with secrets left out.
 */
export function envSettings(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const known = new Set(Object.keys(baseConfigSchema.shape));
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env).sort(([a], [b]) => a.localeCompare(b)))
    if (v !== undefined && (/^(BENCH|CHAOS)_/.test(k) || known.has(k)) && !SECRET.test(k))
      out[k] = v;
  return out;
}

/** The command line that reproduces a run: its shaping environment, then the command. */
export function reproduce(command: string, env: Record<string, string> = envSettings()): string {
  const vars = Object.entries(env).map(([k, v]) => `${k}=${/^[\w.,:/-]*$/.test(v) ? v : `'${v}'`}`);
  return [...vars, command].join(' ');
}

/** JSON as the result files hold it: Maps become objects, non-finite numbers null. */
export function toJson(value: unknown): string {
  return `${JSON.stringify(
    value,
    (_k, v: unknown) => {
      if (v instanceof Map) return Object.fromEntries(v as Map<string, unknown>);
      if (typeof v === 'number' && !Number.isFinite(v)) return null;
      return v;
    },
    2,
  )}\n`;
}

/** Writes `<dir>/<name>.json`, replacing the previous run's; returns the path. */
export function writeResult(dir: string, file: ResultFile): string {
  fs.mkdirSync(dir, { recursive: true });
  const to = path.join(dir, `${file.name}.json`);
  fs.writeFileSync(to, toJson(file));
  return to;
}
