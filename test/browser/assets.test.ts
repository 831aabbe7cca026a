import fs from 'node:fs/promises';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  WIDGET_CACHE_CONTROL,
  WIDGET_FILES,
  widgetAssetsService,
} from '../../services/widget-assets/index.js';
import type { RunningProcess } from '../../bin/process.js';
import { testProcess } from '../helpers/stack.js';

/** The widget scripts as served: type, caching, ETag/304, gzip, CORS, size budget. */

let p: RunningProcess;
beforeAll(async () => {
  p = await testProcess('widget-assets', [widgetAssetsService]);
});
afterAll(async () => {
  await p?.close();
});

const source = (name: string) => fs.readFile(new URL(`../../widget/${name}`, import.meta.url));

describe.each(WIDGET_FILES)('%s', (name) => {
  it('is served as written, with JavaScript type, cache headers and CORS *', async () => {
    const r = await fetch(`${p.url}/${name}`, { headers: { 'accept-encoding': 'identity' } });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(r.headers.get('cache-control')).toBe(WIDGET_CACHE_CONTROL);
    expect(r.headers.get('access-control-allow-origin')).toBe('*');
    expect(r.headers.get('cross-origin-resource-policy')).toBe('cross-origin');
    expect(r.headers.get('x-content-type-options')).toBe('nosniff');
    expect(r.headers.get('vary')).toBe('Accept-Encoding');
    expect(r.headers.get('content-encoding')).toBeNull();
    expect(r.headers.get('etag')).toMatch(/^"[A-Za-z0-9_-]{32}"$/);
    expect(Buffer.from(await r.arrayBuffer()).equals(await source(name))).toBe(true);
  });

  it('is gzipped when the client accepts it, with its own ETag', async () => {
    // node:http, not fetch: fetch would decompress on its own.
    const { request } = await import('node:http');
    const res = await new Promise<{ headers: Record<string, unknown>; body: Buffer }>(
      (resolve, reject) => {
        const req = request(`${p.url}/${name}`, { headers: { 'accept-encoding': 'br, gzip' } });
        req.on('response', (m) => {
          const chunks: Buffer[] = [];
          m.on('data', (c: Buffer) => chunks.push(c));
          m.on('end', () => resolve({ headers: m.headers, body: Buffer.concat(chunks) }));
        });
        req.on('error', reject);
        req.end();
      },
    );
    expect(res.headers['content-encoding']).toBe('gzip');
    expect(res.headers['etag']).toMatch(/^"[A-Za-z0-9_-]{32}-gz"$/);
    expect(Number(res.headers['content-length'])).toBe(res.body.length);
    expect(gunzipSync(res.body).equals(await source(name))).toBe(true);
    // The widget's budget; the cookie banner module, loaded on demand, keeps to the same.
    if (name !== 'svc-dashboard.v1.js') expect(res.body.length).toBeLessThanOrEqual(10 * 1024);
  });

  it('answers 304 to a matching If-None-Match, and HEAD without a body', async () => {
    const first = await fetch(`${p.url}/${name}`, { headers: { 'accept-encoding': 'identity' } });
    const etag = first.headers.get('etag')!;
    await first.arrayBuffer();
    const again = await fetch(`${p.url}/${name}`, { headers: { 'if-none-match': etag } });
    expect(again.status).toBe(304);
    expect(again.headers.get('cache-control')).toBe(WIDGET_CACHE_CONTROL);
    const stale = await fetch(`${p.url}/${name}`, { headers: { 'if-none-match': '"old"' } });
    expect(stale.status).toBe(200);
    await stale.arrayBuffer();
    const head = await fetch(`${p.url}/${name}`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('etag')).toBeTruthy();
    expect((await head.arrayBuffer()).byteLength).toBe(0);
  });
});

it('serves nothing else', async () => {
  for (const path of ['/svc-consent.v2.js', '/widget/svc-consent.v1.js', '/svc-consent.v1.css']) {
    const r = await fetch(`${p.url}${path}`);
    await r.arrayBuffer();
    expect(r.status, path).toBe(404);
  }
});
