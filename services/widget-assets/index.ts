import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import { gzipSync } from 'node:zlib';
import { Router, type Request, type Response } from 'express';
import type { ServiceModule } from '../../shared/module.js';
import { acceptsGzip, notModified } from './http.js';

/**
 * Serves the browser scripts (docs/widget.md) at
 * `{widget_url}/svc-consent.v1.js`, `/svc-dashboard.v1.js` and `/svc-cookies.v1.js` (the cookie
 * banner, loaded on demand), exactly as written in
 * `widget/` (no build step), with a strong ETag, gzip when accepted, and
 * `Access-Control-Allow-Origin: *` so any page may load them (also with `crossorigin` / Subresource
 * Integrity).
 */

export const WIDGET_FILES = [
  'svc-consent.v1.js',
  'svc-dashboard.v1.js',
  'svc-cookies.v1.js',
] as const;
export type WidgetFile = (typeof WIDGET_FILES)[number];

/**
 * The name stays `v1` across compatible releases, so caches must come back for fixes: ten
 * minutes fresh, then revalidated (a 304 via the ETag) while a stale copy may still serve the
 * page for a day.
 */
export const WIDGET_CACHE_CONTROL = 'public, max-age=600, stale-while-revalidate=86400';

export interface WidgetAsset {
  body: Buffer;
  gzip: Buffer;
  /** Strong ETag of the identity body; the gzip representation has its own (`…-gz`). */
  etag: string;
  gzipEtag: string;
}

const defaultDir = new URL('../../widget/', import.meta.url);

/** Reads and compresses the scripts once (when the service is mounted, never at import). */
export async function loadWidgetAssets(
  dir: URL = defaultDir,
): Promise<Map<WidgetFile, WidgetAsset>> {
  const out = new Map<WidgetFile, WidgetAsset>();
  for (const name of WIDGET_FILES) {
    const body = await fs.readFile(new URL(name, dir));
    const hash = createHash('sha256').update(body).digest('base64url').slice(0, 32);
    out.set(name, {
      body,
      gzip: gzipSync(body, { level: 9 }),
      etag: `"${hash}"`,
      gzipEtag: `"${hash}-gz"`,
    });
  }
  return out;
}

function send(asset: WidgetAsset, req: Request, res: Response) {
  const gzip = acceptsGzip(req.get('accept-encoding'));
  res.set({
    'Content-Type': 'text/javascript; charset=utf-8',
    'Cache-Control': WIDGET_CACHE_CONTROL,
    ETag: gzip ? asset.gzipEtag : asset.etag,
    Vary: 'Accept-Encoding',
    'Access-Control-Allow-Origin': '*',
    'Cross-Origin-Resource-Policy': 'cross-origin',
    'Timing-Allow-Origin': '*',
    'X-Content-Type-Options': 'nosniff',
  });
  if (notModified(req.get('if-none-match'), [asset.etag, asset.gzipEtag])) {
    res.status(304).end();
    return;
  }
  const body = gzip ? asset.gzip : asset.body;
  if (gzip) res.set('Content-Encoding', 'gzip');
  res.set('Content-Length', String(body.length));
  // HEAD gets the headers only (Node drops the body).
  res.status(200).end(body);
}

/** GET/HEAD handlers for the given assets; usable on any Express app (the benchmark's too). */
export function widgetAssetsRouter(assets: Map<WidgetFile, WidgetAsset>): Router {
  const r = Router();
  for (const [name, asset] of assets) {
    r.get(`/${name}`, (req, res) => send(asset, req, res));
  }
  return r;
}

export const widgetAssetsService: ServiceModule = {
  name: 'widget-assets',
  async mount(app) {
    app.use(widgetAssetsRouter(await loadWidgetAssets()));
  },
};
