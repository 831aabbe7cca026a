import { createHash } from 'node:crypto';
import type { Router } from 'express';
import { z } from 'zod';
import { LANGUAGES } from '../../shared/domain/types.js';
import { AppError } from '../../shared/errors.js';
import { isLanguage } from '../../shared/i18n/index.js';
import type { Runtime } from '../../shared/runtime.js';
import { browserStrings } from './strings.js';

/**
 * `GET /api/v1/widget/strings/{lang}`: the widget's and the dashboard's UI strings in one of the
 * 23 languages, so the browser scripts carry English only and fetch a language when they need it
 * (the dialog gets its strings with the notice config; this serves the rest: a failure message
 * before any config, the dashboard). The same for everyone: no credentials, any origin, cached.
 */

const stringSet = z.record(z.string(), z.string());
export const browserStringsResponse = z.object({
  language: z.enum(LANGUAGES),
  dir: z.enum(['ltr', 'rtl']),
  widget: stringSet,
  dashboard: stringSet,
});

/** Fresh for an hour, then revalidated by ETag; a stale copy may serve a day meanwhile. */
export const STRINGS_CACHE_CONTROL = 'public, max-age=3600, stale-while-revalidate=86400';

export function mountBrowserStrings(r: Router, rt: Runtime): void {
  const bodies = new Map(
    LANGUAGES.map((l) => {
      const body = JSON.stringify(browserStrings(l));
      const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
      return [l, { body, etag }] as const;
    }),
  );
  r.get('/strings/:lang', (req, res) => {
    res.set({ 'Access-Control-Allow-Origin': '*', 'Cross-Origin-Resource-Policy': 'cross-origin' });
    const lang = req.params.lang;
    if (!isLanguage(lang))
      throw new AppError('SVC_NOT_FOUND', `No UI strings for "${String(lang).slice(0, 16)}"`);
    const { body, etag } = bodies.get(lang)!;
    res.set({ 'Cache-Control': STRINGS_CACHE_CONTROL, ETag: etag });
    const seen = (req.get('if-none-match') ?? '').split(',').map((t) => t.trim());
    if (seen.some((t) => t === '*' || t.replace(/^W\//, '') === etag)) {
      res.status(304).end();
      return;
    }
    res.type('application/json').send(body);
  });
  rt.docs.add({
    method: 'get',
    path: '/api/v1/widget/strings/{lang}',
    summary:
      'The widget’s and the dashboard’s UI strings in one of the 23 languages (no credentials, any origin, cached)',
    tag: 'Widget',
    responses: {
      200: { description: 'The strings and the writing direction', schema: browserStringsResponse },
      304: { description: 'Not modified: `If-None-Match` names the current ETag' },
      404: { description: 'Not one of the 23 language codes' },
    },
  });
}
