import type { BaseConfig } from '../config.js';
import type { App } from '../domain/types.js';
import { signPortalToken, type PortalKeyConfig } from './token.js';

/** Where the hosted portal lives, relative to PUBLIC_BASE_URL. */
export const PORTAL_PATH = '/portal';

export type PortalLinkConfig = PortalKeyConfig &
  Pick<BaseConfig, 'PUBLIC_BASE_URL' | 'PORTAL_LINK_TTL_MS'>;

/**
 * The 'Manage consent' link for one principal (SPEC G). An app with a `portalUrlTemplate`
 * gets its own URL with `{referenceId}` filled in (URL-encoded; the app authenticates its
 * users there, so no token is added); otherwise the hosted portal with a token that expires
 * PORTAL_LINK_TTL_MS after `now`.
 */
export function portalLink(
  config: PortalLinkConfig,
  app: Pick<App, 'appId' | 'portalUrlTemplate'>,
  referenceId: string,
  now: Date,
): string {
  const ref = encodeURIComponent(referenceId);
  if (app.portalUrlTemplate) return app.portalUrlTemplate.replaceAll('{referenceId}', ref);
  const token = signPortalToken(config, {
    appId: app.appId,
    referenceId,
    expiresAt: new Date(now.getTime() + config.PORTAL_LINK_TTL_MS),
  });
  const base = config.PUBLIC_BASE_URL.replace(/\/+$/, '');
  return `${base}${PORTAL_PATH}/${ref}?token=${encodeURIComponent(token)}`;
}
