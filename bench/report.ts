import type { Machine, ResultFile } from './record.js';

/**
 * The docs' generated tables, from the result files alone (pure: the same files give the same
 * text). A file that is missing gives a "not measured yet" row, never a number.
 */
export interface Results {
  bench: Map<string, ResultFile | undefined>;
  chaos: Map<string, ResultFile | undefined>;
  /** The fault scenarios `npm run chaos -- all` runs, in its order. */
  chaosAll: string[];
}

type Row = (string | number)[];

/** A value at a path of an untyped result (the files are data, read defensively). */
function at(value: unknown, ...keys: (string | number)[]): unknown {
  let v = value;
  for (const k of keys) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string | number, unknown>)[k];
  }
  return v;
}
const num = (value: unknown, ...keys: (string | number)[]): number | undefined => {
  const v = at(value, ...keys);
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
};
const list = (value: unknown, ...keys: (string | number)[]): unknown[] => {
  const v = at(value, ...keys);
  return Array.isArray(v) ? (v as unknown[]) : [];
};

/** A number as the docs print it: fixed digits, thousands separated; '–' when absent. */
export function n(x: number | undefined, digits = 0): string {
  if (x === undefined) return '–';
  const [int, frac] = x.toFixed(digits).split('.');
  const grouped = int!.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return frac === undefined ? grouped : `${grouped}.${frac}`;
}

export function table(head: string[], rows: Row[]): string {
  const line = (cells: (string | number)[]) => `| ${cells.join(' | ')} |`;
  return [line(head), line(head.map(() => '---')), ...rows.map(line)].join('\n');
}

const GiB = 1024 ** 3;
export function machineLine(m: Machine): string {
  return `${m.cpus} cores (${m.model}), ${n(m.memoryBytes / GiB)} GiB, Node ${m.node}, ${m.os}`;
}

const notMeasured = (command: string) => `not measured yet — run \`${command}\``;
const benchCommand = (name: string) => `npm run bench -- ${name}`;

/**
 * "Measured on … Reproduce: …" under a table, with links from `linkBase`. Several fault runs
 * made with their plain command are named by `npm run chaos -- all` and their folder, so the
 * line stays one line however many scenarios ran.
 */
function provenance(files: ResultFile[], linkBase: string, dir: string): string {
  const machines = [...new Set(files.map((f) => machineLine(f.machine)))];
  const dates = files.map((f) => f.date.slice(0, 10)).sort();
  const when = dates[0] === dates.at(-1) ? dates[0] : `${dates[0]} to ${dates.at(-1)}`;
  const dirty = files.some((f) => f.commit?.dirty) ? ' (from a work tree with changes)' : '';
  const plain = files.every(
    (f) => f.kind === 'chaos' && f.command === `npm run chaos -- ${f.name}`,
  );
  const many = files.length > 1 && plain;
  const links = many
    ? [`[${dir}/](${linkBase}${dir}/)`]
    : files.map((f) => `[${f.name}.json](${linkBase}${dir}/${f.name}.json)`);
  const commands = many
    ? ['`npm run chaos -- all` (or one scenario)']
    : [...new Set(files.map((f) => `\`${f.command}\``))];
  return [
    `Measured ${when}${dirty} on ${machines.join('; ')}.`,
    `Reproduce: ${commands.join(', ')}. Result${files.length > 1 ? 's' : ''}: ${links.join(', ')}.`,
  ].join(' ');
}

/** The e2e row of ours (or the peer's) at `rate`/s. */
function rateRow(side: unknown, rate: number): unknown {
  return list(side, 'rates').find((r) => num(r, 'rate') === rate);
}

function chaosTotals(r: Results) {
  const measured = r.chaosAll.map((s) => r.chaos.get(s)).filter((f) => f !== undefined);
  const sum = (k: string) => measured.reduce((t, f) => t + (num(f.figures, k) ?? 0), 0);
  return {
    measured,
    passed: measured.filter((f) => f.passed).length,
    lost: sum('lost'),
    copies: sum('copies'),
    missing: r.chaosAll.filter((s) => !r.chaos.get(s)),
  };
}

/** The README's headline table: e2e against the peer, and the fault runs' totals. */
export function renderHeadline(r: Results): string {
  const e2e = r.bench.get('e2e');
  const rows: Row[] = [];
  if (!e2e) {
    for (const figure of [
      'Sustained rate (every consent accepted and delivered, p99 ≤ 1 s)',
      'POST → signed webhook at 100/s, p50 / p99',
      'Items written a consent, by rate',
      'Write units a consent, as AWS on demand bills, by rate',
    ])
      rows.push([figure, notMeasured(benchCommand('e2e')), '']);
  } else {
    const f = e2e.figures;
    const ours100 = rateRow(at(f, 'ours'), 100);
    const peer100 = rateRow(at(e2e.baseline, 'peer'), 100);
    const floor = at(e2e.baseline, 'kafkaFloorAt100');
    const ratio = num(f, 'sustained', 'ratio');
    const perS = (x: number | undefined) =>
      x === undefined ? 'below the lowest rate' : `${n(x)}/s`;
    rows.push([
      'Sustained rate (every consent accepted and delivered, p99 ≤ 1 s)',
      perS(num(f, 'sustained', 'ours')),
      `peer ${perS(num(f, 'sustained', 'peer'))}${ratio === undefined ? '' : `; ratio ${n(ratio, 2)}`}`,
    ]);
    rows.push([
      'POST → signed webhook at 100/s, p50 / p99',
      ours100 ? `${n(num(ours100, 'p50'))} / ${n(num(ours100, 'p99'))} ms` : 'not run at 100/s',
      [
        peer100 && `peer ${n(num(peer100, 'p50'))} / ${n(num(peer100, 'p99'))} ms`,
        floor && `Kafka alone ${n(num(floor, 'p50'))} / ${n(num(floor, 'p99'))} ms`,
      ]
        .filter(Boolean)
        .join('; '),
    ]);
    // Items and units a consent at each rate ours ran (they hardly move with the rate).
    const oursRows = list(at(f, 'ours'), 'rates');
    const perRate = (key: string) =>
      oursRows.map((row) => `${n(num(row, 'rate'))}/s ${n(num(row, key), 1)}`).join(', ') || '–';
    const perRateOf = (value: (row: unknown) => number | undefined, digits: number, unit = '') =>
      oursRows
        .map((row) => `${n(num(row, 'rate'))}/s ${n(value(row), digits)}${unit}`)
        .join(', ') || '–';
    rows.push([
      'Items a consent writes, by rate',
      perRateOf((row) => {
        const all = num(row, 'itemsWritten');
        const coordination = num(row, 'coordinationItems');
        return all === undefined || coordination === undefined ? undefined : all - coordination;
      }, 2),
      'target ≤ 4; coordination apart',
    ]);
    rows.push([
      'Coordination writes (leases, watermarks), by rate',
      perRateOf((row) => num(row, 'coordinationPerS'), 1, '/s'),
      'a fixed pace, not per consent',
    ]);
    rows.push([
      'Write units a consent, as AWS on demand bills, by rate',
      perRate('billedUnits'),
      'target ≤ 6',
    ]);
  }
  const c = chaosTotals(r);
  const all = `npm run chaos -- all`;
  if (c.measured.length === 0) {
    rows.push(['Fault scenarios passed', notMeasured(all), '']);
  } else {
    const missing = c.missing.length
      ? `; ${c.missing.length} not measured yet — run \`${all}\``
      : '';
    rows.push([
      'Fault scenarios passed',
      `${c.passed} of ${c.measured.length}`,
      `${r.chaosAll.length} scenarios${missing}`,
    ]);
    rows.push([
      'Consents lost, over every fault scenario',
      n(c.lost),
      'answered 201, never delivered',
    ]);
    rows.push([
      'Copies, over every fault scenario',
      n(c.copies),
      'an attempt made again, same `webhook-id`',
    ]);
  }
  const files = [e2e, ...c.measured].filter((f) => f !== undefined);
  const byDir = (kind: ResultFile['kind']) => files.filter((f) => f.kind === kind);
  const notes = [
    byDir('bench').length ? provenance(byDir('bench'), '', 'bench/results') : '',
    byDir('chaos').length ? provenance(byDir('chaos'), '', 'test/chaos/results') : '',
  ].filter(Boolean);
  return [table(['figure', 'ours', 'against'], rows), '', ...notes.join('\n\n').split('\n')]
    .join('\n')
    .trimEnd();
}

/** Each bench's table, in `r.bench`'s order. */
export function renderBenchmarks(r: Results): string {
  const parts: string[] = [];
  for (const [name, file] of r.bench) {
    parts.push(`### \`${name}\``, '');
    if (!file) {
      parts.push(table(['figure', 'value'], [['–', notMeasured(benchCommand(name))]]), '');
      continue;
    }
    parts.push(benchTable(name, file), '', provenance([file], '../', 'bench/results'), '');
  }
  return parts.join('\n').trimEnd();
}

/** A table per bench, from its figures (x) and its baseline (b). */
const benchTables: Record<string, (x: unknown, b: unknown) => string> = {
  e2e: e2eTable,
  ingress: (x, b) =>
    table(
      ['path', 'per second', 'p50 ms', 'p99 ms', 'errors'],
      [
        ['`POST /api/v1/consents`', ...runCells(at(x, 'service'))],
        [
          `baseline: raw \`TransactWriteItems\` of ${n(num(b, 'rawTransactWriteItems', 'items'))} items`,
          ...runCells(at(b, 'rawTransactWriteItems')),
        ],
        [`ratio (target ≥ ${n(num(x, 'targets', 'ratio'), 2)})`, n(num(x, 'ratio'), 2), '', '', ''],
      ],
    ),
  dispatch: (x, b) =>
    table(
      ['figure', 'measured', 'baseline or target'],
      [
        [
          'signed, ledgered deliveries/s',
          n(num(x, 'throughput', 'deliveriesPerS')),
          `plain loopback POST ${n(num(b, 'plainPostPerS'))}/s; DynamoDB Local alone ${n(num(b, 'ledgerCeilingItemsPerS'))} dispatch items/s`,
        ],
        [
          'deliveries / plain POST',
          n(num(x, 'ratioToPlainPost'), 3),
          `≥ ${num(x, 'targets', 'ratioToPlainPost')}`,
        ],
        [
          'deliveries / store ceiling',
          n(num(x, 'ratioToCeiling'), 3),
          `≥ ${num(x, 'targets', 'ratioToCeiling')}`,
        ],
        [
          'CPU µs a delivery (bench process)',
          n(num(x, 'cpuUsPerDelivery')),
          `≤ ${num(x, 'targets', 'cpuUsPerDelivery')} for the dispatcher`,
        ],
        ...list(x, 'latency').map((l) => [
          `event → webhook at ${n(num(l, 'rate'))}/s, ${num(l, 'hanging') ? '1 of 20 endpoints hanging' : '20 endpoints'}: p50 / p99`,
          `${n(num(l, 'p50'))} / ${n(num(l, 'p99'))} ms`,
          `${n(num(l, 'delivered'))} of ${n(num(l, 'expected'))} delivered`,
        ]),
        ...list(b, 'kafkaFloor').map((k) => [
          `Kafka alone at ${n(num(k, 'rate'))}/s: p50 / p99`,
          `${n(num(k, 'p50'))} / ${n(num(k, 'p99'))} ms`,
          'baseline',
        ]),
        ['healthy p99, one hanging / all healthy', n(num(x, 'isolationP99Ratio'), 2), '≤ 1.2'],
      ],
    ),
  widget: (x) =>
    [
      table(
        ['file', 'bytes', 'gzip bytes (as served)'],
        list(x, 'files').map((w) => [
          `\`${String(at(w, 'name'))}\``,
          n(num(w, 'rawBytes')),
          n(num(w, 'gzipBytes')),
        ]),
      ),
      '',
      table(
        ['page', 'script', 'p50 ms', 'p95 ms', 'max ms'],
        list(x, 'gate').map((g) => [
          String(at(g, 'page')),
          String(at(g, 'placement')),
          n(num(g, 'p50Ms'), 2),
          n(num(g, 'p95Ms'), 2),
          n(num(g, 'maxMs'), 2),
        ]),
      ),
      '',
      `Budgets: \`svc-consent.v1.js\` ≤ ${n(num(x, 'budgets', 'gzipBytes'))} B gzip; triggers gated within ${n(num(x, 'budgets', 'gateP95Ms'))} ms at p95.`,
    ].join('\n'),
  timers: (x, b) =>
    table(
      ['not-due timers stored', 'median sweep ms', ''],
      [
        [n(num(b, 'small', 'stored')), n(num(b, 'small', 'medianMs'), 1), 'baseline'],
        [n(num(x, 'large', 'stored')), n(num(x, 'large', 'medianMs'), 1), ''],
        ['ratio large / small', n(num(x, 'ratio'), 2), `target ≤ ${num(x, 'target')}`],
      ],
    ),
  store: (x) =>
    [
      table(
        ['request', 'CPU ms a request', 'per item or consent', 'requests/s'],
        list(x, 'cases').map((c) => {
          const cpu = num(c, 'cpuMsPerRequest');
          const per = num(c, 'per') ?? 1;
          return [
            String(at(c, 'label')),
            n(cpu, 2),
            per > 1 && cpu !== undefined ? n(cpu / per, 2) : '',
            n(num(c, 'requestsPerS')),
          ];
        }),
      ),
      '',
      table(
        ['write, one at a time', 'p50 ms on disk', 'p50 ms on tmpfs'],
        list(x, 'sync').map((s) => [
          String(at(s, 'label')),
          n(num(s, 'diskP50Ms'), 2),
          n(num(s, 'tmpfsP50Ms'), 2),
        ]),
      ),
    ].join('\n'),
  ordering: (x, b) =>
    table(
      ['app', 'other principals delivered', 'p50 / p99 ms', 'withdrawals before their grant'],
      [
        [
          '`principal`',
          n(num(x, 'ordered', 'delivered')),
          `${n(num(x, 'ordered', 'p50Ms'))} / ${n(num(x, 'ordered', 'p99Ms'))}`,
          `${n(num(x, 'ordered', 'withdrawalsBeforeTheirGrant'))} (held ${n(num(x, 'ordered', 'held'))})`,
        ],
        [
          'baseline: `independent`',
          n(num(b, 'independent', 'delivered')),
          `${n(num(b, 'independent', 'p50Ms'))} / ${n(num(b, 'independent', 'p99Ms'))}`,
          n(num(b, 'independent', 'withdrawalsBeforeTheirGrant')),
        ],
        ['p99 ratio', '', n(num(x, 'p99Ratio'), 2), ''],
      ],
    ),
  refusal: (x, b) =>
    table(
      ['503 answered by', 'server CPU µs a request'],
      [
        ['admission control, before Express', n(num(x, 'admissionCpuUs'))],
        ['baseline: the same 503 through Express', n(num(b, 'throughExpressCpuUs'))],
        ['ratio', n(num(x, 'ratio'), 2)],
      ],
    ),
};

function benchTable(name: string, f: ResultFile): string {
  const render = benchTables[name];
  return render
    ? render(f.figures, f.baseline)
    : table(['figure', 'value'], [['–', 'no table for this bench yet']]);
}

const runCells = (r: unknown): Row => [
  n(num(r, 'perSecond')),
  n(num(r, 'p50Ms'), 1),
  n(num(r, 'p99Ms'), 1),
  n(num(r, 'errors')),
];

function e2eTable(figures: unknown, baseline: unknown): string {
  const head = [
    'side',
    'rate/s',
    'accepted',
    'refused',
    'undelivered',
    'p50 / p99 ms',
    'items (own + coordination)',
    'billed units',
    'CPU ms',
  ];
  const row = (side: string, r: unknown, label = n(num(r, 'rate'))): Row => [
    side,
    label,
    n(num(r, 'accepted')),
    n(num(r, 'refused')),
    n(num(r, 'undelivered')),
    `${n(num(r, 'p50'))} / ${n(num(r, 'p99'))}`,
    items(r),
    n(num(r, 'billedUnits'), 1),
    n(num(r, 'cpuMs'), 1),
  ];
  const ours = at(figures, 'ours');
  const peer = at(baseline, 'peer');
  const rows: Row[] = list(ours, 'rates').map((r) => row('ours', r));
  const twice = at(ours, 'twice');
  if (twice) rows.push(row('ours', twice, `${n(num(twice, 'rate'))} (twice sustained)`));
  const burst = at(ours, 'burst');
  if (burst) rows.push(row('ours', burst, `${n(num(burst, 'rate'))} (burst)`));
  if (typeof peer === 'string') rows.push(['peer', peer, '', '', '', '', '', '', '']);
  else {
    rows.push(...list(peer, 'rates').map((r) => row('peer', r)));
    const pb = at(peer, 'burst');
    if (pb) rows.push(row('peer', pb, `${n(num(pb, 'rate'))} (burst)`));
  }
  const floor = at(baseline, 'kafkaFloorAt100');
  const s = at(figures, 'sustained');
  return [
    table(head, rows),
    '',
    `Sustained: ours ${n(num(s, 'ours'))}/s, the peer ${n(num(s, 'peer'))}/s (ratio ${n(num(s, 'ratio'), 2)}). ` +
      `Kafka alone at 100/s: p50 ${n(num(floor, 'p50'))} ms, p99 ${n(num(floor, 'p99'))} ms. ` +
      'Items, billed units (the AWS on-demand model) and CPU (the service process) are a consent’s.',
    ...budgetTable(figures, baseline),
  ].join('\n');
}

/** A consent's items: its own, plus its share of the coordination writes (leases, watermarks). */
function items(r: unknown): string {
  const all = num(r, 'itemsWritten');
  const coordination = num(r, 'coordinationItems');
  if (all === undefined || all === 0) return '–';
  if (coordination === undefined) return n(all, 2);
  return `${n(all - coordination, 2)} + ${n(coordination, 2)}`;
}

/**
 * Where a consent's CPU goes, part by part, and what 100 consents/s would take in cores: as
 * measured, each part at its lowest, with DynamoDB Local at the floor of its own puts measured
 * in the same run, without it (AWS DynamoDB), and the peer.
 */
function budgetTable(figures: unknown, baseline: unknown): string[] {
  const budget = list(figures, 'budget');
  if (budget.length === 0) return [];
  const rows: Row[] = budget.map((b) => {
    const parts = at(b, 'parts');
    const text = Object.entries(parts && typeof parts === 'object' ? parts : {})
      .map(([k, v]) => `${k} ${n(typeof v === 'number' ? v : undefined, 1)}`)
      .join(', ');
    return [
      typeof at(b, 'label') === 'string' ? (at(b, 'label') as string) : '',
      text,
      n(num(b, 'msPerConsent'), 1),
      n(num(b, 'cores'), 2),
    ];
  });
  const floor = at(baseline, 'storeFloorCpuMs');
  const puts = num(floor, 'puts');
  const cores = num(list(figures, 'budget')[0], 'machineCores');
  return [
    '',
    table(['CPU ms a consent', 'by part', 'total', 'cores at 100/s'], rows),
    '',
    puts === undefined || cores === undefined
      ? ''
      : `DynamoDB Local’s own floor in the same run (a consent’s puts, sent raw): ${n(puts, 1)} ms of its CPU a consent, so on ${n(cores)} cores it alone tops out at ${n((cores * 1000) / puts)} consents/s.`,
  ];
}

/** The fault table: a row per scenario of `npm run chaos -- all`. */
export function renderChaos(r: Results): string {
  const rows: Row[] = r.chaosAll.map((s) => {
    const f = r.chaos.get(s);
    if (!f) return [`\`${s}\``, notMeasured(`npm run chaos -- ${s}`), '', '', '', '', '', '', ''];
    const x = f.figures;
    const answers = at(x, 'answers');
    const other = Object.entries(answers && typeof answers === 'object' ? answers : {})
      .filter(([k]) => k !== '201')
      .map(([k, v]) => `${n(typeof v === 'number' ? v : undefined)} × ${k}`)
      .join(', ');
    return [
      `\`${s}\``,
      f.passed ? 'passed' : 'FAILED',
      n(num(x, 'accepted')),
      n(num(x, 'delivered')),
      n(num(x, 'lost')),
      n(num(x, 'copies')),
      n(num(x, 'multipleIds')),
      at(x, 'ledger', 'ok') === true ? 'balances' : 'does not balance',
      other || 'none',
    ];
  });
  const measured = r.chaosAll.map((s) => r.chaos.get(s)).filter((f) => f !== undefined);
  return [
    table(
      [
        'scenario',
        'result',
        'accepted',
        'delivered',
        'lost',
        'copies',
        '>1 webhook-id',
        'ledger',
        'other answers',
      ],
      rows,
    ),
    ...(measured.length ? ['', provenance(measured, '../', 'test/chaos/results')] : []),
  ].join('\n');
}

/** Replaces what lies between `<!-- results:<id>:start -->` and its end marker. */
export function replaceSection(doc: string, id: string, content: string): string {
  const start = `<!-- results:${id}:start -->`;
  const end = `<!-- results:${id}:end -->`;
  const i = doc.indexOf(start);
  const j = doc.indexOf(end);
  if (i < 0 || j < i) throw new Error(`markers ${start} … ${end} not found`);
  return `${doc.slice(0, i + start.length)}\n${content}\n${doc.slice(j)}`;
}

/** What lies between the markers now (for the check). */
export function section(doc: string, id: string): string | undefined {
  const start = `<!-- results:${id}:start -->`;
  const i = doc.indexOf(start);
  const j = doc.indexOf(`<!-- results:${id}:end -->`);
  if (i < 0 || j < i) return undefined;
  return doc.slice(i + start.length + 1, j - 1);
}
