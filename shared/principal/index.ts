/** Principal tokens: what the public API, the widget, the portal and the notifier import. */
export {
  checkPrincipalToken,
  issuePrincipalToken,
  mintPrincipalToken,
  type AccessFailure,
  type PrincipalAccess,
  type PrincipalAccessDeps,
} from './access.js';
export {
  MAX_TTL_MS,
  TOKEN_PREFIX,
  acceptedKeyIds,
  signPrincipalToken,
  verifyPrincipalToken,
  type PrincipalClaims,
  type PrincipalKeyConfig,
  type TokenFailure,
  type TokenKind,
  type TokenResult,
} from './token.js';
