import { Router } from 'express';
import { z } from 'zod';
import { captureConsent } from '../../shared/domain/consent/index.js';
import { mintStatusToken } from '../../shared/domain/consent/decision-status.js';
import { loadPrincipal } from '../../shared/storage/consents/repository.js';
import { markWidgetVerified } from '../../shared/domain/apps.js';
import { keyedHash } from '../../shared/domain/crypto.js';
import { getNoticeByTriggerKey } from '../../shared/domain/notices.js';
import { patterns } from '../../shared/domain/ids.js';
import { REGION_FORMAT, canonicalRegion } from '../../shared/domain/regions.js';
import { LANGUAGES, type NoticeVersion } from '../../shared/domain/types.js';
import { AppError } from '../../shared/errors.js';
import { corsPreflight, requireSiteKey } from '../../shared/http/auth.js';
import { idempotency } from '../../shared/http/idempotency.js';
import { appOf } from '../../shared/http/locals.js';
import { rateLimit } from '../../shared/http/ratelimit.js';
import { parseBody } from '../../shared/http/validate.js';
import { MAX_TTL_MS, issuePrincipalToken } from '../../shared/principal/index.js';
import type { ServiceModule } from '../../shared/module.js';
import type { Runtime } from '../../shared/runtime.js';
import { mountDecisionStatus } from './status-route.js';
import { mountBrowserStrings } from './strings-route.js';
import { languageNames, uiStrings } from './strings.js';

const processId = z
  .string()
  .regex(patterns.triggerKey, 'a trigger key: lower-case words joined by _');

/** A state or union territory of India (a retired code reads as its successor). */
const region = z
  .string()
  .max(8)
  .refine((r) => canonicalRegion(r) !== undefined, `must be ${REGION_FORMAT}`)
  .transform((r) => canonicalRegion(r)!);

export const configQuery = z.object({
  lang: z.string().max(8).optional(),
  /** The visitor's state or union territory: picks among notices with regions. */
  region: region.optional(),
});

export const configResponse = z.object({
  processId: z.string(),
  /** The region asked for (current code), or null. */
  region: z.string().nullable(),
  noticeId: z.string(),
  noticeVersion: z.number().int(),
  /** The regions of the notice chosen; null for the notice without regions. */
  noticeRegions: z.array(z.string()).nullable(),
  kind: z.enum(['data_collection', 'cookie']),
  language: z.string(),
  languages: z.array(z.string()),
  /** Each of `languages` named in its own script, for a language picker. */
  languageNames: z.record(z.string(), z.string()),
  title: z.string(),
  body: z.string(),
  purposes: z.array(
    z.object({
      name: z.string(),
      label: z.string(),
      description: z.string(),
      required: z.boolean(),
      dataItems: z.array(z.string()),
    }),
  ),
  validityDays: z.number().int(),
  /** The dialog's UI strings in `language` (shared/i18n). */
  ui: z.record(z.string(), z.string()),
});

export const captureBody = z.object({
  siteKey: z.string().regex(patterns.siteKey),
  processId,
  mode: z.enum(['silent', 'granular']),
  /** Granted purpose names, or a map purpose → granted. Ignored in silent mode (all granted). */
  purposes: z
    .union([z.array(z.string().regex(patterns.purpose)).max(40), z.record(z.string(), z.boolean())])
    .default([]),
  language: z.enum(LANGUAGES).default('en'),
  pageUrl: z.string().url().max(2048),
  /** The region the config was asked for (the page's data-region); stored in the proof. */
  region: region.optional(),
});

export const captureResponse = z.object({
  consentId: z.string().uuid(),
  referenceId: z.string(),
  expiresAt: z.string(),
  /**
   * A principal token (svc_pt_…, 24 h) for the principal this capture created: the widget
   * keeps it to open the dashboard for that person. A replay (same Idempotency-Key) gets a
   * fresh one only from the client address that made the capture, while the principal is not
   * erased; otherwise the field is absent.
   */
  principalToken: z.string().optional(),
  /**
   * An opaque token (svc_st_…) naming this decision for `GET /api/v1/widget/status/{token}`:
   * whether it still stands, readable without a principal token. It reveals nothing about the
   * principal and works only with this app's site key.
   */
  statusToken: z.string(),
  /**
   * `pending` under a notice that requires verifiable parental consent: nothing is granted
   * until the app confirms the parent's verification.
   */
  parentalVerification: z.literal('pending').optional(),
});

/**
 * The notice text in `lang`, falling back to English, then to the notice's default language.
 * Lookups are by own property only: `?lang=valueOf` is an unknown language, not a function.
 */
export function renderConfig(n: NoticeVersion, lang: string | undefined, region?: string) {
  const has = (l: string) => Object.hasOwn(n.translations, l);
  const language = lang && has(lang) ? lang : has('en') ? 'en' : n.defaultLanguage;
  const t = n.translations[language]!;
  const label = (name: string) => (Object.hasOwn(t.purposes, name) ? t.purposes[name] : undefined);
  return {
    processId: n.triggerKey,
    region: region ?? null,
    noticeId: n.noticeId,
    noticeVersion: n.version,
    noticeRegions: n.regions?.length ? n.regions : null,
    kind: n.kind,
    language,
    languages: Object.keys(n.translations),
    languageNames: languageNames(Object.keys(n.translations)),
    title: t.title,
    body: t.body,
    purposes: n.purposes.map((p) => ({
      name: p.name,
      label: label(p.name)?.label ?? p.name,
      description: label(p.name)?.description ?? '',
      required: p.required,
      dataItems: p.dataItems,
    })),
    validityDays: n.validityDays,
    ui: { ...uiStrings(language) },
  };
}

/**
 * The notice of `triggerKey` for `region` (docs/api.md, Regions): the one whose regions include
 * it, else the one without regions, else 404.
 */
async function noticeOr404(
  rt: Runtime,
  appId: string,
  triggerKey: string,
  region: string | undefined,
): Promise<NoticeVersion> {
  const n = await getNoticeByTriggerKey(rt, appId, triggerKey, region);
  if (!n)
    throw new AppError(
      'SVC_NOT_FOUND',
      region === undefined
        ? `No notice with trigger key ${triggerKey}`
        : `No notice with trigger key ${triggerKey} for ${region} or without regions`,
    );
  return n;
}

/**
 * Widget calls (docs/api.md, Widget calls): site key + origin allowlist, CORS for the page's
 * origin.
 */
export const widgetService: ServiceModule = {
  name: 'widget',
  mount(app, rt) {
    const r = Router();
    r.options(['/config/:processId', '/capture', '/status/:token'], corsPreflight(rt));
    mountBrowserStrings(r, rt);

    r.get('/config/:processId', requireSiteKey(rt), rateLimit(rt), async (req, res) => {
      const a = appOf(res);
      const pid = parseBody(processId, req.params.processId, 'processId');
      const { lang, region } = parseBody(configQuery, req.query, 'query');
      const notice = await noticeOr404(rt, a.appId, pid, region);
      // requireSiteKey has checked the Origin against the allowlist: the script is installed there.
      await markWidgetVerified(rt, a.appId, req.get('origin') ?? '', new Date());
      res.json(renderConfig(notice, lang, region));
    });

    // Anyone can send a capture: it is also limited per client IP (keyed hash) within the app.
    const captureLimit = rateLimit(rt, { perClientIp: true });
    // The stored answer keeps no principal token: a replay is minted a fresh one, and only
    // for the client address that made the capture (anyone may send the same body and key).
    const captureIdempotency = idempotency(rt, 'widget', {
      credentials: {
        fields: ['principalToken'],
        reissue: async (answer, { res, sameClient }) => {
          const a = appOf(res);
          const ref = answer.referenceId;
          if (!sameClient || typeof ref !== 'string') return answer;
          const principal = await loadPrincipal(rt, a.appId, ref);
          if (!principal || principal.erasedAt !== undefined) return answer;
          const { token } = issuePrincipalToken(rt.config, a, ref, {
            kind: 'browser',
            ttlMs: MAX_TTL_MS.browser,
          });
          return { ...answer, principalToken: token };
        },
      },
    });
    r.post('/capture', requireSiteKey(rt), captureLimit, captureIdempotency, async (req, res) => {
      const a = appOf(res);
      const body = parseBody(captureBody, req.body);
      const notice = await noticeOr404(rt, a.appId, body.processId, body.region);
      const names = new Set(notice.purposes.map((p) => p.name));
      const asked = Array.isArray(body.purposes)
        ? body.purposes
        : Object.entries(body.purposes).flatMap(([k, v]) => (v ? [k] : []));
      const named = Array.isArray(body.purposes) ? body.purposes : Object.keys(body.purposes);
      const unknown = named.filter((p) => !names.has(p));
      if (unknown.length > 0) {
        throw new AppError('SVC_VALIDATION_FAILED', 'Unknown purpose for this notice', {
          errors: unknown.map((p) => ({
            path: `/purposes/${p}`,
            message: 'not a purpose of this notice',
          })),
        });
      }
      const granted = body.mode === 'silent' ? [...names] : asked;
      const result = await captureConsent(rt, a, notice, {
        mode: body.mode,
        granted,
        language: Object.hasOwn(notice.translations, body.language) ? body.language : 'en',
        pageUrl: body.pageUrl,
        userAgent: (req.get('user-agent') ?? '').slice(0, 512),
        ipHash: keyedHash(rt.config, 'ip', req.ip ?? ''),
        region: body.region,
      });
      // The capture just created this principal, so the browser that made it may act for it.
      const { token } = issuePrincipalToken(rt.config, a, result.referenceId, {
        kind: 'browser',
        ttlMs: MAX_TTL_MS.browser,
      });
      res
        .status(201)
        .set('Cache-Control', 'no-store')
        .json({
          consentId: result.transactionId,
          referenceId: result.referenceId,
          expiresAt: result.expiresAt,
          principalToken: token,
          statusToken: mintStatusToken(rt.config, a.appId, result.transactionId),
          ...(result.parentalVerification ? { parentalVerification: 'pending' } : {}),
        });
    });

    mountDecisionStatus(r, rt);
    app.use('/api/v1/widget', r);

    rt.docs.add({
      method: 'get',
      path: '/api/v1/widget/config/{processId}',
      summary:
        'Notice configuration for the widget (language falls back to English; the notice for the region, else the one without regions)',
      tag: 'Widget',
      security: ['siteKey'],
      query: configQuery,
      responses: {
        200: { description: 'Configuration', schema: configResponse },
        401: { description: 'Missing or unknown site key' },
        403: { description: 'Origin not on the allowlist' },
        404: {
          description: 'Unknown trigger key, or no notice for the region nor without regions',
        },
        422: { description: 'Malformed trigger key or unknown region code' },
        429: { description: 'Rate limited' },
      },
    });
    rt.docs.add({
      method: 'post',
      path: '/api/v1/widget/capture',
      summary: 'Capture consent from the widget; stores proof of consent',
      tag: 'Widget',
      security: ['siteKey'],
      body: captureBody,
      responses: {
        201: { description: 'Captured', schema: captureResponse },
        401: { description: 'Missing or unknown site key' },
        403: { description: 'Origin not on the allowlist' },
        404: {
          description: 'Unknown trigger key, or no notice for the region nor without regions',
        },
        422: { description: 'Invalid body, unknown region code or unknown purpose' },
        429: { description: 'Rate limited (per site key and per client address)' },
      },
    });
  },
};
