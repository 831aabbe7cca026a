/** Hosted-portal links: what the portal service and the notifier import. */
export { PORTAL_PATH, portalLink, type PortalLinkConfig } from './link.js';
