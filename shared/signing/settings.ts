import { z } from 'zod';

/** Keys: encryption at rest, ledger and receipt signing, principal tokens (docs/security.md). */
export const keySettings = {
  /** 32-byte key (base64 or hex) for encrypting secret keys at rest. */
  SVC_ENCRYPTION_KEY: z.string().optional(),
  /** Keyring for rotation: `kid:key,kid:key`, the first current, the others only open. */
  SVC_ENCRYPTION_KEYS: z
    .string()
    .regex(
      /^\s*[A-Za-z0-9_-]{1,32}:[^,:\s]+\s*(,\s*[A-Za-z0-9_-]{1,32}:[^,:\s]+\s*)*$/,
      'kid:key,kid:key',
    )
    .optional(),
  /** Ed25519 signing key (32-byte seed, hex or base64, or PKCS#8 PEM); required in production. */
  SVC_SIGNING_KEY: z.string().optional(),
  /** Comma-separated public keys (base64url) still published after a rotation. */
  SVC_SIGNING_RETIRED_KEYS: z.string().default(''),
  /** Key id new principal tokens are signed under (derived from SVC_ENCRYPTION_KEY). */
  PRINCIPAL_TOKEN_KEY_ID: z
    .string()
    .regex(/^[A-Za-z0-9]{1,16}$/)
    .default('k1'),
  /** Comma-separated key ids whose tokens are still accepted. */
  PRINCIPAL_TOKEN_PREVIOUS_KEY_IDS: z
    .string()
    .regex(/^([A-Za-z0-9]{1,16}(,[A-Za-z0-9]{1,16})*)?$/)
    .default(''),
};
