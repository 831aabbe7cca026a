/** Hosted-portal links and their tokens: what the portal service and the notifier import. */
export { PORTAL_PATH, portalLink, type PortalLinkConfig } from './link.js';
export {
  signPortalToken,
  verifyPortalToken,
  type PortalClaims,
  type PortalKeyConfig,
  type PortalTokenFailure,
  type PortalTokenResult,
} from './token.js';
