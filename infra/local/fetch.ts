import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { StackError } from './errors.js';
import { projectRoot } from './paths.js';

// eslint-disable-next-line no-control-regex -- strips ANSI colour codes from mvn output
const ansi = /\x1b\[[0-9;]*m/g;

export type Component = 'kafka' | 'dynamodb';

const pomPath = path.join(projectRoot, 'infra', 'local', 'pom.xml');

/** Fails with one clear line when a required command is missing. */
export function requireCommand(cmd: string, args: string[], what: string): void {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  if (r.error || r.status !== 0) {
    throw new StackError(
      `${cmd} is not available (${what}); install it (e.g. apt-get install ${cmd === 'mvn' ? 'maven' : 'openjdk-17-jre-headless'}) or set KAFKA_BROKERS and DYNAMODB_ENDPOINT to use external infrastructure`,
    );
  }
}

function pomDigest(): string {
  return createHash('sha256').update(fs.readFileSync(pomPath)).digest('hex').slice(0, 16);
}

/**
 * Makes sure the jars of one component are in `dir`, fetching them from Maven Central with
 * `mvn dependency:copy-dependencies` on first use. A marker file records the pom digest so a
 * version bump in pom.xml fetches again; a half-finished fetch is never mistaken for a
 * complete one because the jars are copied to a temporary folder and renamed into place.
 */
export function ensureJars(component: Component, dir: string, log: (msg: string) => void): void {
  const marker = path.join(dir, '.complete');
  const digest = pomDigest();
  if (fs.existsSync(marker) && fs.readFileSync(marker, 'utf8').trim() === digest) return;
  requireCommand('java', ['-version'], 'needed to run the embedded Kafka and DynamoDB Local');
  requireCommand('mvn', ['-v'], 'needed to fetch the Kafka and DynamoDB Local jars');
  log(`fetching ${component} jars from Maven Central (first run only)…`);
  const tmp = `${dir}.tmp-${process.pid}`;
  fs.rmSync(tmp, { recursive: true, force: true });
  fs.mkdirSync(path.dirname(dir), { recursive: true });
  const r = spawnSync(
    'mvn',
    [
      '-B',
      '-q',
      '-f',
      pomPath,
      '-P',
      component,
      'dependency:copy-dependencies',
      `-DoutputDirectory=${tmp}`,
      '-DincludeScope=runtime',
    ],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
  );
  if (r.status !== 0) {
    fs.rmSync(tmp, { recursive: true, force: true });
    const out = `${r.stdout}\n${r.stderr}`;
    const firstError =
      out.split('\n').find((l) => l.includes('ERROR')) ?? out.trim().split('\n')[0];
    const reason = /resolve|transfer|connect|UnknownHost|Network/i.test(out)
      ? 'Maven Central is unreachable or an artifact is missing'
      : 'mvn failed';
    throw new StackError(
      `could not fetch ${component} jars: ${reason} (${(firstError ?? '')
        .replace(ansi, '')
        .trim()
        .slice(0, 200)}); check network access to Maven Central and rerun`,
    );
  }
  fs.rmSync(dir, { recursive: true, force: true });
  fs.renameSync(tmp, dir);
  fs.writeFileSync(marker, digest);
}
