import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Reading the repository's Markdown as GitHub renders it: headings, anchors, links, code. */

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** README.md and every page directly under docs/, as paths from the root. */
export function docPages(): string[] {
  const docs = fs
    .readdirSync(path.join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`);
  return ['README.md', ...docs];
}

export const read = (rel: string) => fs.readFileSync(path.join(root, rel), 'utf8');

/** The text outside fenced code blocks, line by line (a fenced line becomes empty). */
export function prose(md: string): string[] {
  let fence: string | undefined;
  return md.split('\n').map((line) => {
    const m = /^\s*(```+|~~~+)/.exec(line);
    if (m) {
      if (fence === undefined) fence = m[1]![0]!;
      else if (m[1]![0] === fence) fence = undefined;
      return '';
    }
    return fence === undefined ? line : '';
  });
}

/** The fenced code blocks of one info string (`sh`, `html`…), their lines joined. */
export function codeBlocks(md: string, lang: string): string[] {
  const out: string[] = [];
  const re = new RegExp(`^\`\`\`${lang}\\n([\\s\\S]*?)^\`\`\``, 'gm');
  for (const m of md.matchAll(re)) out.push(m[1]!);
  return out;
}

/** GitHub's anchor for a heading's text. */
export function slug(heading: string): string {
  const text = heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1') // a link's text
    .replace(/<[^>]+>/g, '')
    .replace(/[`*]/g, '');
  return text
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** Every anchor a page has: its headings' slugs (repeats numbered as GitHub does). */
export function anchors(md: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of prose(md)) {
    const m = /^#{1,6}\s+(.+?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = slug(m[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** Every link target on a page outside code: Markdown links, images, `src=` and `href=`. */
export function links(md: string): { line: number; target: string }[] {
  const out: { line: number; target: string }[] = [];
  prose(md).forEach((raw, i) => {
    const line = raw.replace(/`[^`]*`/g, ''); // inline code is not a link
    for (const m of line.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g))
      out.push({ line: i + 1, target: m[1]! });
    for (const m of line.matchAll(/\b(?:src|href)="([^"]+)"/g))
      out.push({ line: i + 1, target: m[1]! });
  });
  return out;
}

export const external = (target: string) => /^[a-z][a-z0-9+.-]*:/i.test(target);
