/**
 * A small seeded PRNG (mulberry32) for the fuzz suite: the same seed gives the same sequence of
 * choices, so a failing run is repeated with `--seed`. Every request draws from its own stream,
 * derived from the run's seed and the request's index, so one request's choices do not depend
 * on how many draws the requests before it made.
 */
export class Rng {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** The stream of request `index` in a run seeded with `seed`. */
  static of(seed: number, index: number): Rng {
    let h = (seed ^ Math.imul(index + 1, 0x9e3779b1)) >>> 0;
    h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
    h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
    return new Rng((h ^ (h >>> 16)) >>> 0);
  }

  /** A float in [0, 1). */
  next(): number {
    let t = (this.state = (this.state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  }

  /** An integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  /** An integer in [lo, hi]. */
  range(lo: number, hi: number): number {
    return lo + this.int(hi - lo + 1);
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError('pick from an empty list');
    return items[this.int(items.length)]!;
  }

  /** One of `entries`, each as likely as its weight. */
  weighted<T>(entries: readonly (readonly [number, T])[]): T {
    const total = entries.reduce((s, [w]) => s + w, 0);
    let r = this.next() * total;
    for (const [w, v] of entries) {
      if ((r -= w) < 0) return v;
    }
    return entries[entries.length - 1]![1];
  }

  /** `n` characters drawn from `alphabet`. */
  chars(alphabet: string, n: number): string {
    let out = '';
    for (let i = 0; i < n; i++) out += alphabet[this.int(alphabet.length)];
    return out;
  }

  hex(n: number): string {
    return this.chars('0123456789abcdef', n);
  }
}

export const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
export const REF_ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
export const ULID_ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
