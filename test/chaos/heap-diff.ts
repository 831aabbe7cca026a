import fs from 'node:fs';
import { pathToFileURL } from 'node:url';

/**
 * `tsx test/chaos/heap-diff.ts <earlier.heapsnapshot> <later.heapsnapshot> [--retainers=Name]`
 * Compares two V8 heap snapshots (the soak's, test-results/heap/): per constructor (objects by
 * their constructor's name, the rest by kind, as devtools' summary groups them) the count and
 * self size in each and the change, the largest growth and shrinking. `--retainers` prints, for a few objects of
 * that group that are new in the later snapshot, the chain of what holds them.
 */

interface Snapshot {
  snapshot: {
    meta: {
      node_fields: string[];
      node_types: [string[], ...unknown[]];
      edge_fields: string[];
      edge_types: [string[], ...unknown[]];
    };
  };
  nodes: number[];
  edges: number[];
  strings: string[];
}

interface Parsed {
  s: Snapshot;
  nodeFields: number;
  edgeFields: number;
  count: number;
  key: (i: number) => string;
  id: (i: number) => number;
  selfSize: (i: number) => number;
  name: (i: number) => string;
  firstEdge: Int32Array;
}

const kinds: Record<string, string> = {
  closure: '(closure)',
  array: '(array)',
  string: '(string)',
  'concatenated string': '(string)',
  'sliced string': '(string)',
  code: '(compiled code)',
  hidden: '(system)',
  number: '(number)',
  regexp: '(regexp)',
  bigint: '(bigint)',
  symbol: '(symbol)',
  'object shape': '(object shape)',
};

export function parse(file: string): Parsed {
  const s = JSON.parse(fs.readFileSync(file, 'utf8')) as Snapshot;
  const f = s.snapshot.meta.node_fields;
  const nodeFields = f.length;
  const edgeFields = s.snapshot.meta.edge_fields.length;
  const [TYPE, NAME, ID, SIZE, EDGES] = ['type', 'name', 'id', 'self_size', 'edge_count'].map((n) =>
    f.indexOf(n),
  ) as [number, number, number, number, number];
  const types = s.snapshot.meta.node_types[0];
  const count = s.nodes.length / nodeFields;
  const firstEdge = new Int32Array(count + 1);
  for (let i = 0, e = 0; i < count; i++) {
    firstEdge[i] = e;
    e += s.nodes[i * nodeFields + EDGES]! * edgeFields;
    firstEdge[i + 1] = e;
  }
  const name = (i: number) => s.strings[s.nodes[i * nodeFields + NAME]!]!;
  return {
    s,
    nodeFields,
    edgeFields,
    count,
    firstEdge,
    name,
    id: (i) => s.nodes[i * nodeFields + ID]!,
    selfSize: (i) => s.nodes[i * nodeFields + SIZE]!,
    key: (i) => {
      const t = types[s.nodes[i * nodeFields + TYPE]!]!;
      return t === 'object' || t === 'native' ? name(i) : (kinds[t] ?? `(${t})`);
    },
  };
}

function summary(p: Parsed): Map<string, { count: number; size: number }> {
  const m = new Map<string, { count: number; size: number }>();
  for (let i = 0; i < p.count; i++) {
    const k = p.key(i);
    const e = m.get(k) ?? { count: 0, size: 0 };
    e.count++;
    e.size += p.selfSize(i);
    m.set(k, e);
  }
  return m;
}

/** For a few objects of group `key` new in `later`, the path of first retainers (6 deep). */
function retainers(earlier: Parsed, later: Parsed, key: string, max = 5): string[] {
  const old = new Set<number>();
  for (let i = 0; i < earlier.count; i++) old.add(earlier.id(i));
  const ef = later.s.snapshot.meta.edge_fields;
  const [ETYPE, ENAME, ETO] = ['type', 'name_or_index', 'to_node'].map((n) => ef.indexOf(n)) as [
    number,
    number,
    number,
  ];
  const etypes = later.s.snapshot.meta.edge_types[0];
  const retainer = new Int32Array(later.count).fill(-1);
  const via: string[] = new Array<string>(later.count);
  for (let i = 0; i < later.count; i++)
    for (let e = later.firstEdge[i]!; e < later.firstEdge[i + 1]!; e += later.edgeFields) {
      const t = etypes[later.s.edges[e + ETYPE]!]!;
      if (t === 'weak' || t === 'shortcut') continue;
      const to = later.s.edges[e + ETO]! / later.nodeFields;
      if (retainer[to] !== -1) continue;
      retainer[to] = i;
      const n = later.s.edges[e + ENAME]!;
      via[to] = t === 'element' || t === 'hidden' ? `[${n}]` : `.${later.s.strings[n]}`;
    }
  const out: string[] = [];
  for (let i = 0; i < later.count && out.length < max; i++) {
    if (later.key(i) !== key || old.has(later.id(i))) continue;
    const chain: string[] = [];
    for (let n = i, d = 0; n !== -1 && d < 8; n = retainer[n]!, d++)
      chain.push(`${later.key(n)}${n === i ? '' : ''}${via[n] ?? ''}`);
    out.push(chain.join('  ←  '));
  }
  return out;
}

function main(): void {
  const [a, b, ...rest] = process.argv.slice(2);
  if (!a || !b) {
    process.stderr.write(
      'usage: tsx test/chaos/heap-diff.ts <earlier> <later> [--retainers=Name] [--top=N]\n',
    );
    process.exit(2);
  }
  const opt = (n: string) => rest.find((r) => r.startsWith(`--${n}=`))?.split('=')[1];
  const earlier = parse(a);
  const later = parse(b);
  const sa = summary(earlier);
  const sb = summary(later);
  const rows = [...new Set([...sa.keys(), ...sb.keys()])].map((k) => {
    const x = sa.get(k) ?? { count: 0, size: 0 };
    const y = sb.get(k) ?? { count: 0, size: 0 };
    return { k, x, y, dSize: y.size - x.size, dCount: y.count - x.count };
  });
  rows.sort((p, q) => q.dSize - p.dSize);
  const kb = (n: number) => `${(n / 1024).toFixed(0)} KiB`;
  const total = (m: Map<string, { size: number }>) =>
    [...m.values()].reduce((t, e) => t + e.size, 0);
  process.stdout.write(
    `total self size ${kb(total(sa))} → ${kb(total(sb))}\n` +
      `${'constructor'.padEnd(40)} ${'count'.padStart(20)} ${'self size'.padStart(26)}\n`,
  );
  // The largest growth first, then the largest shrinking.
  const top = Number(opt('top') ?? 30);
  const shown = rows.length > 2 * top ? [...rows.slice(0, top), ...rows.slice(-top)] : rows;
  for (const r of shown)
    process.stdout.write(
      `${r.k.slice(0, 40).padEnd(40)} ${`${r.x.count} → ${r.y.count}`.padStart(20)} ${`${kb(r.x.size)} → ${kb(r.y.size)}`.padStart(26)}  ${r.dSize >= 0 ? '+' : ''}${kb(r.dSize)}\n`,
    );
  const key = opt('retainers');
  if (key) for (const line of retainers(earlier, later, key)) process.stdout.write(`${line}\n`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) main();
