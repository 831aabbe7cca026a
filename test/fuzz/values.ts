import { EDGE_NUMBERS, hostileString, PROTO_KEYS } from './hostile.js';
import { BASE62, REF_ALPHABET, ULID_ALPHABET, type Rng } from './rng.js';

/**
 * Values for the fuzz suite: valid ones generated from the OpenAPI (JSON Schema) of a route,
 * and the ways they are broken (wrong types, hostile strings, prototype keys, huge and deep
 * values). Pure: every choice comes from the Rng it is given.
 */

export type Json = null | boolean | number | string | Raw | Json[] | { [key: string]: Json };

/** JSON text inserted as is: nesting too deep for JSON.stringify, in this process or the service's. */
export class Raw {
  constructor(readonly text: string) {}
}

/** JSON.stringify with `Raw` fragments and own `__proto__` keys; -0 is written as `-0`. */
export function stringify(v: Json): string {
  if (v instanceof Raw) return v.text;
  if (v === null || typeof v !== 'object') {
    if (typeof v === 'number' && Object.is(v, -0)) return '-0';
    return JSON.stringify(v);
  }
  if (Array.isArray(v)) return `[${v.map(stringify).join(',')}]`;
  return `{${Object.keys(v)
    .map((k) => `${JSON.stringify(k)}:${stringify(v[k]!)}`)
    .join(',')}}`;
}

/** The JSON Schema subset zod's `toJSONSchema` produces for this API. */
export interface Schema {
  type?: string | string[];
  enum?: Json[];
  const?: Json;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  not?: Schema;
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: boolean | Schema;
  propertyNames?: Schema;
  items?: Schema;
  minItems?: number;
  maxItems?: number;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  pattern?: string;
  format?: string;
  default?: Json;
}

const LONG_PATTERN_DATE = /\\d\{4\}-/;

/** Values for the patterns the API uses; anything else gets a plain token. */
function fromPattern(pattern: string, rng: Rng): string | undefined {
  if (pattern.includes('SVC-REF-')) return `SVC-REF-${rng.chars(REF_ALPHABET, 8)}`;
  if (pattern.includes('APP_')) return `APP_${rng.chars(BASE62, 24)}`;
  if (pattern.includes('dsp_')) return `dsp_${rng.chars(ULID_ALPHABET, 26)}`;
  if (pattern.includes('app_')) return `app_${rng.chars(BASE62, 20)}`;
  if (pattern.includes('[a-z][a-z0-9_]'))
    return rng.pick(['analytics', 'marketing', `p_${rng.hex(4)}`]);
  if (pattern.includes('[a-z0-9]+(_[a-z0-9]+)*')) return `key_${rng.hex(6)}`;
  if (LONG_PATTERN_DATE.test(pattern)) return isoTime(rng);
  if (pattern.includes('A-Za-z0-9._@')) return `fz-${rng.hex(8)}@x`;
  return undefined;
}

export function isoTime(rng: Rng, millis = true): string {
  const t = Date.now() + rng.range(-30, 1) * 86_400_000 + rng.int(86_400_000);
  const s = new Date(t).toISOString();
  return millis ? s : s.replace(/\.\d{3}Z$/, 'Z');
}

function uuid(rng: Rng): string {
  const h = rng.hex(32);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-7${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20)}`;
}

function stringFor(s: Schema, rng: Rng): string {
  if (s.format === 'email') return `fz-${rng.hex(8)}@fuzz.example`;
  if (s.format === 'uri' || s.format === 'url') return `https://shop.example/p/${rng.hex(6)}`;
  if (s.format === 'date-time') return isoTime(rng);
  if (s.format === 'date') return isoTime(rng).slice(0, 10);
  if (s.format === 'uuid') return uuid(rng);
  const p = s.pattern ? fromPattern(s.pattern, rng) : undefined;
  if (p !== undefined) return p;
  const min = s.minLength ?? 1;
  const max = Math.min(s.maxLength ?? 24, 24);
  return rng.chars('abcdefghijklmnopqrstuvwxyz', Math.max(min, rng.range(min, Math.max(min, max))));
}

/** Supplies a value for a named field from the world (ids, keys), or leaves it to the schema. */
export type Hint = (name: string | undefined, schema: Schema, rng: Rng) => Json | undefined;

/** A value that satisfies `schema` as far as this generator knows how. */
export function generate(schema: Schema, rng: Rng, hint: Hint, name?: string, depth = 0): Json {
  const hinted = hint(name, schema, rng);
  if (hinted !== undefined) return hinted;
  if (schema.const !== undefined) return schema.const;
  if (schema.enum) return rng.pick(schema.enum);
  const alts = schema.anyOf ?? schema.oneOf;
  if (alts && alts.length > 0) return generate(rng.pick(alts), rng, hint, name, depth);
  if (schema.allOf && schema.allOf.length > 0)
    return generate(schema.allOf[0]!, rng, hint, name, depth);
  const type = Array.isArray(schema.type) ? rng.pick(schema.type) : schema.type;
  switch (type) {
    case 'string':
      return stringFor(schema, rng);
    case 'integer': {
      const lo = Math.ceil(schema.minimum ?? 0);
      const hi = Math.floor(Math.min(schema.maximum ?? lo + 100, lo + 1000));
      return rng.chance(0.5) ? Math.min(hi, lo + rng.int(4)) : rng.range(lo, hi);
    }
    case 'number': {
      const lo = schema.minimum ?? 0;
      const hi = Math.min(schema.maximum ?? lo + 100, lo + 1000);
      return lo + rng.next() * (hi - lo);
    }
    case 'boolean':
      return rng.chance(0.5);
    case 'null':
      return null;
    case 'array': {
      const min = schema.minItems ?? 0;
      const max = Math.min(schema.maxItems ?? 3, min + 3);
      const n = rng.range(min, Math.max(min, max));
      const items = schema.items ?? { type: 'string' };
      return Array.from({ length: n }, () => generate(items, rng, hint, name, depth + 1));
    }
    default:
      return objectFor(schema, rng, hint, depth, name);
  }
}

function objectFor(schema: Schema, rng: Rng, hint: Hint, depth: number, name?: string): Json {
  const out: Record<string, Json> = {};
  if (depth > 6) return out;
  const required = new Set(schema.required ?? []);
  for (const [key, s] of Object.entries(schema.properties ?? {})) {
    // `not` is how zod writes a field that must be absent (z.never()).
    if (!required.has(key) && s.not !== undefined && !rng.chance(0.05)) continue;
    if (required.has(key) || rng.chance(0.6))
      setKey(out, key, generate(s, rng, hint, key, depth + 1));
  }
  const extra = schema.additionalProperties;
  if (typeof extra === 'object' && Object.keys(schema.properties ?? {}).length === 0) {
    const n = rng.range(1, 3);
    for (let i = 0; i < n; i++) {
      const named = hint(`${name ?? ''}.key`, schema.propertyNames ?? { type: 'string' }, rng);
      const key =
        typeof named === 'string' ? named : rng.pick(['analytics', 'marketing', 'en', 'hi']);
      setKey(out, key, generate(extra, rng, hint, undefined, depth + 1));
    }
  }
  return out;
}

/** Sets an own, enumerable property, even for `__proto__` (plain assignment would set the prototype). */
export function setKey(o: Record<string, Json>, key: string, value: Json): void {
  Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });
}

type Path = (string | number)[];

function paths(v: Json, at: Path = [], out: Path[] = [], depth = 0): Path[] {
  out.push(at);
  if (depth > 8 || v === null || typeof v !== 'object' || v instanceof Raw) return out;
  if (Array.isArray(v)) v.forEach((x, i) => paths(x, [...at, i], out, depth + 1));
  else for (const k of Object.keys(v)) paths(v[k]!, [...at, k], out, depth + 1);
  return out;
}

function getAt(root: Json, p: Path): Json | undefined {
  let v: Json | undefined = root;
  for (const k of p) {
    if (v === null || typeof v !== 'object' || v instanceof Raw) return undefined;
    v = (v as Record<string | number, Json>)[k];
  }
  return v;
}

function setAt(root: Json, p: Path, value: Json): Json {
  if (p.length === 0) return value;
  const parent = getAt(root, p.slice(0, -1));
  const k = p[p.length - 1]!;
  if (Array.isArray(parent) && typeof k === 'number') parent[k] = value;
  else if (parent && typeof parent === 'object' && !(parent instanceof Raw))
    setKey(parent as Record<string, Json>, String(k), value);
  return root;
}

function deleteAt(root: Json, p: Path): Json {
  if (p.length === 0) return root;
  const parent = getAt(root, p.slice(0, -1));
  const k = p[p.length - 1]!;
  if (Array.isArray(parent) && typeof k === 'number') parent.splice(k, 1);
  else if (parent && typeof parent === 'object' && !(parent instanceof Raw))
    delete (parent as Record<string, Json>)[String(k)];
  return root;
}

function wrongType(v: Json | undefined, rng: Rng): Json {
  const choices: Json[] = [
    null,
    true,
    0,
    -1,
    1.5,
    '',
    'x',
    [],
    {},
    [1, 'a'],
    { a: 1 },
    rng.pick(EDGE_NUMBERS),
  ];
  let out = rng.pick(choices);
  for (let i = 0; i < 4 && typeof out === typeof v && Array.isArray(out) === Array.isArray(v); i++)
    out = rng.pick(choices);
  return out;
}

function deep(depth: number, rng: Rng): Json {
  const leaf = rng.pick(['1', '"x"', 'null', '{}']);
  return rng.chance(0.5)
    ? new Raw(`${'['.repeat(depth)}${leaf}${']'.repeat(depth)}`)
    : new Raw(`${'{"a":'.repeat(depth)}${leaf}${'}'.repeat(depth)}`);
}

/** A prototype-polluting object: the keys JSON.parse makes own properties of. */
export function protoObject(rng: Rng): Record<string, Json> {
  const o: Record<string, Json> = {};
  setKey(
    o,
    rng.pick(PROTO_KEYS),
    rng.pick<Json>([
      { polluted: true, isAdmin: true },
      'x',
      true,
      null,
      { prototype: { polluted: true } },
    ]),
  );
  if (rng.chance(0.5)) setKey(o, rng.pick(PROTO_KEYS), { toString: 'x', valueOf: 1 });
  return o;
}

export const MUTATIONS = [
  'wrong-type',
  'drop-field',
  'extra-field',
  'proto-key',
  'proto-value',
  'hostile-string',
  'huge-string',
  'huge-array',
  'deep-nest',
  'edge-number',
  'null',
  'replace-root',
] as const;
export type Mutation = (typeof MUTATIONS)[number];

/** Breaks `value` in one way; returns the broken value and what was done. */
export function mutate(value: Json, rng: Rng): { value: Json; note: string } {
  const all = paths(value);
  const p = rng.pick(all);
  const where = `/${p.join('/')}`;
  const objects = all.filter((q) => {
    const v = getAt(value, q);
    return v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Raw);
  });
  const m = rng.pick(MUTATIONS);
  switch (m) {
    case 'wrong-type':
      return {
        value: setAt(value, p, wrongType(getAt(value, p), rng)),
        note: `wrong type at ${where}`,
      };
    case 'drop-field':
      return { value: deleteAt(value, p), note: `dropped ${where}` };
    case 'extra-field':
    case 'proto-key': {
      const q = objects.length > 0 ? rng.pick(objects) : [];
      const target = getAt(value, q);
      if (!target || typeof target !== 'object' || Array.isArray(target) || target instanceof Raw)
        return { value: protoObject(rng), note: 'root replaced by a prototype object' };
      const key =
        m === 'proto-key'
          ? rng.pick(PROTO_KEYS)
          : rng.pick(['extra', 'isAdmin', 'appId', 'role', ...PROTO_KEYS]);
      setKey(
        target as Record<string, Json>,
        key,
        rng.chance(0.5) ? protoObject(rng) : hostileString(rng),
      );
      return { value, note: `key ${JSON.stringify(key)} added at /${q.join('/')}` };
    }
    case 'proto-value':
      return {
        value: setAt(value, p, rng.pick(PROTO_KEYS)),
        note: `prototype name as value at ${where}`,
      };
    case 'hostile-string': {
      const s = hostileString(rng);
      return {
        value: setAt(value, p, s),
        note: `hostile string ${JSON.stringify(s.slice(0, 40))} at ${where}`,
      };
    }
    case 'huge-string':
      return {
        value: setAt(value, p, 'A'.repeat(rng.range(10_000, 70_000))),
        note: `huge string at ${where}`,
      };
    case 'huge-array':
      return {
        value: setAt(
          value,
          p,
          Array.from({ length: rng.range(200, 12_000) }, (_, i) => (rng.chance(0.5) ? i : `x${i}`)),
        ),
        note: `huge array at ${where}`,
      };
    case 'deep-nest': {
      const d = rng.pick([50, 500, 3_000, 10_000]);
      return { value: setAt(value, p, deep(d, rng)), note: `nesting ${d} deep at ${where}` };
    }
    case 'edge-number': {
      const n = rng.pick(EDGE_NUMBERS);
      return { value: setAt(value, p, n), note: `number ${n} at ${where}` };
    }
    case 'null':
      return { value: setAt(value, p, null), note: `null at ${where}` };
    case 'replace-root': {
      const v = rng.pick<Json>([null, [], 'x', 1, true, [value], { data: value }]);
      return { value: v, note: `body replaced by ${stringify(v).slice(0, 40)}` };
    }
  }
}
