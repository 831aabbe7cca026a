import type { BaseConfig } from '../config.js';
import type { App } from '../domain/types.js';
import { issuePrincipalToken, type PrincipalKeyConfig } from '../principal/index.js';

/** Where the hosted portal lives, relative to PUBLIC_BASE_URL. */
export const PORTAL_PATH = '/portal';

export type PortalLinkConfig = PrincipalKeyConfig &
  Pick<BaseConfig, 'PUBLIC_BASE_URL' | 'PORTAL_LINK_TTL_MS'>;

/**
 * The 'Manage consent' link for one principal (docs/api.md, Hosted portal), carrying a fresh
 * principal token (kind `portal`, valid PORTAL_LINK_TTL_MS, at most 7 days, after `now`).
 *
 * The hosted portal gets the token in the URL fragment (`#token=`), which browsers never send
 * to a server, so it stays out of access logs, proxies and Referer headers; the portal page's
 * script reads it from there. An app with a `portalUrlTemplate` gets its own URL with
 * `{referenceId}` and, where the template asks for it, `{token}` filled in (URL-encoded); a
 * template without `{token}` gets none (the app authenticates its users itself).
 *
 * `language` (of the e-mail) opens the hosted portal in that language (`?lang=`, absent for
 * English); a template may place it with `{lang}`.
 */
export function portalLink(
  config: PortalLinkConfig,
  app: Pick<App, 'appId' | 'portalUrlTemplate' | 'secretVersion'>,
  referenceId: string,
  now: Date,
  language = 'en',
): string {
  const ref = encodeURIComponent(referenceId);
  const token = () =>
    issuePrincipalToken(config, app, referenceId, {
      kind: 'portal',
      ttlMs: config.PORTAL_LINK_TTL_MS,
      now,
    }).token;
  const tpl = app.portalUrlTemplate;
  if (tpl) {
    const withRef = tpl
      .replaceAll('{referenceId}', ref)
      .replaceAll('{lang}', encodeURIComponent(language));
    return withRef.includes('{token}')
      ? withRef.replaceAll('{token}', encodeURIComponent(token()))
      : withRef;
  }
  const base = config.PUBLIC_BASE_URL.replace(/\/+$/, '');
  const query = language === 'en' ? '' : `?lang=${encodeURIComponent(language)}`;
  return `${base}${PORTAL_PATH}/${ref}${query}#token=${encodeURIComponent(token())}`;
}
