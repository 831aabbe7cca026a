/**
 * Pure HTTP helpers of the asset server: content negotiation and conditional requests.
 */

/** Whether `Accept-Encoding` allows gzip (RFC 9110 §12.5.3: `gzip` or `*`, with q > 0). */
export function acceptsGzip(header: string | undefined): boolean {
  if (!header) return false;
  let gzip: number | undefined;
  let star: number | undefined;
  for (const part of header.split(',')) {
    const [coding = '', ...params] = part.split(';').map((s) => s.trim().toLowerCase());
    const qParam = params.find((p) => p.startsWith('q='));
    const q = qParam === undefined ? 1 : Number(qParam.slice(2));
    const weight = Number.isFinite(q) ? q : 0;
    if (coding === 'gzip' || coding === 'x-gzip') gzip = weight;
    else if (coding === '*') star = weight;
  }
  return (gzip ?? star ?? 0) > 0;
}

/**
 * Whether `If-None-Match` names one of `etags` (weak comparison, RFC 9110 §13.1.2): `*`, or
 * any listed tag with or without `W/`.
 */
export function notModified(ifNoneMatch: string | undefined, etags: string[]): boolean {
  if (!ifNoneMatch) return false;
  const bare = (t: string) => t.trim().replace(/^W\//, '');
  const wanted = new Set(etags.map(bare));
  return ifNoneMatch.split(',').some((t) => t.trim() === '*' || wanted.has(bare(t)));
}
