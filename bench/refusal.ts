import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BenchOutcome } from './record.js';

/**
 * `npm run bench -- refusal`: what one refusal by admission control (HTTP_MAX_IN_FLIGHT) costs
 * the service's process in CPU, against the same 503 problem answered through Express (the
 * path refusals took before admission control moved into the server's request listener). The
 * server is the service's own HTTP layer in a process of its own (bench/refusal/server.ts); this
 * process sends POSTs with a consent's JSON body over 64 keep-alive connections and reads the
 * server's CPU from /proc. A breakdown of the burst in `npm run bench -- e2e`, not a headline.
 * BENCH_REFUSAL_COUNT requests a pass (20,000); each kind is measured twice, interleaved, after
 * a warm-up of 3,000 of each.
 */
const COUNT = Number(process.env.BENCH_REFUSAL_COUNT ?? 20_000);
const here = path.dirname(fileURLToPath(import.meta.url));

function cpuMs(pid: number): number {
  const s = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) * 10;
}

const body = JSON.stringify({
  userId: 'user-1234567890@shop.example',
  email: 'user@shop.example',
  consents: { analytics: true, marketing: false },
});

export async function run(): Promise<BenchOutcome> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', path.join(here, 'refusal', 'server.ts')],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  try {
    const port = await new Promise<number>((resolve, reject) => {
      child.stdout.once('data', (d: Buffer) => resolve(Number(String(d).trim())));
      child.once('exit', (code) => reject(new Error(`the server exited (${code})`)));
    });
    const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
    const send = (p: string, type = 'application/json') =>
      new Promise<number>((resolve, reject) => {
        const q = http.request(
          {
            host: '127.0.0.1',
            port,
            path: p,
            method: 'POST',
            agent,
            headers: {
              'content-type': type,
              'content-length': Buffer.byteLength(body),
              authorization: 'Bearer sk_bench',
            },
          },
          (r) => {
            r.resume();
            r.on('end', () => resolve(r.statusCode ?? 0));
          },
        );
        q.on('error', reject);
        q.end(body);
      });
    // Holds the one admitted request, so every other API request is refused.
    const held = http.request({ host: '127.0.0.1', port, path: '/api/hold', method: 'POST' });
    held.on('error', () => undefined);
    held.end();
    await new Promise((r) => setTimeout(r, 300));

    const pass = async (p: string, n: number, type?: string) => {
      let i = 0;
      const statuses = new Map<number, number>();
      const before = cpuMs(child.pid!);
      const t0 = Date.now();
      await Promise.all(
        Array.from({ length: 64 }, async () => {
          while (i++ < n) {
            const s = await send(p, type);
            statuses.set(s, (statuses.get(s) ?? 0) + 1);
          }
        }),
      );
      return { cpuUs: ((cpuMs(child.pid!) - before) * 1000) / n, ms: Date.now() - t0, statuses };
    };
    const early = '/api/v1/consents';
    // text/plain: the JSON parser steps aside, as it came after admission control in Express.
    const express = '/through-express';
    await pass(early, 3_000);
    await pass(express, 3_000, 'text/plain');
    const rows: { name: string; cpuUs: number; ms: number; statuses: Map<number, number> }[] = [];
    for (let round = 0; round < 2; round++) {
      rows.push({ name: 'admission control (before Express)', ...(await pass(early, COUNT)) });
      rows.push({
        name: 'baseline: the same 503 through Express',
        ...(await pass(express, COUNT, 'text/plain')),
      });
    }
    console.log(`${COUNT} POSTs a pass, 64 keep-alive connections; the server's CPU a request:`);
    for (const r of rows)
      console.log(
        `  ${r.name.padEnd(40)} ${r.cpuUs.toFixed(0).padStart(5)} µs   (${(COUNT / (r.ms / 1000)).toFixed(0)}/s; answers ${[...r.statuses].map(([k, v]) => `${v} × ${k}`).join(', ')})`,
      );
    const mean = (name: string) => {
      const m = rows.filter((r) => r.name === name);
      return m.reduce((a, r) => a + r.cpuUs, 0) / m.length;
    };
    const a = mean(rows[0]!.name);
    const b = mean(rows[1]!.name);
    console.log(`  a refusal costs ${(a / b).toFixed(2)} of what it cost through Express`);
    held.destroy();
    agent.destroy();
    const passes = rows.map((r) => ({
      name: r.name,
      cpuUsPerRequest: r.cpuUs,
      requestsPerS: COUNT / (r.ms / 1000),
      answers: Object.fromEntries(r.statuses),
    }));
    return {
      figures: { admissionCpuUs: a, ratio: a / b, passes: passes.filter((_, i) => i % 2 === 0) },
      baseline: { throughExpressCpuUs: b, passes: passes.filter((_, i) => i % 2 === 1) },
      settings: { requestsPerPass: COUNT, connections: 64 },
    };
  } finally {
    child.kill('SIGKILL');
  }
}
