import { z } from 'zod';
import type { ServiceModule } from '../../shared/module.js';
import { KEYS_PATH, signingKeys } from '../../shared/signing/keys.js';

/**
 * `GET /.well-known/svc-keys.json`: the service's Ed25519 public keys as a JWK set, each under its
 * key id (docs/security.md, Ledger checkpoints, "The key"). Whoever holds a ledger export or a
 * signed receipt verifies it with this document alone. Public, cacheable, readable from any origin.
 */

export { KEYS_PATH };

const jwk = z.object({
  kty: z.literal('OKP'),
  crv: z.literal('Ed25519'),
  x: z.string().describe('The 32-byte public key, base64url'),
  kid: z.string().describe('RFC 7638 thumbprint of the key: the keyId signatures name'),
  use: z.literal('sig'),
  alg: z.literal('EdDSA'),
  status: z.enum(['active', 'retired']).describe('retired keys only verify what they signed'),
});

export const keysService: ServiceModule = {
  name: 'keys',
  mount(app, rt) {
    const ring = signingKeys(rt.config);
    app.get(KEYS_PATH, (_req, res) => {
      res.setHeader('Cache-Control', 'public, max-age=300');
      res.setHeader('Access-Control-Allow-Origin', '*');
      res.json(ring.jwks);
    });
    rt.docs.add({
      method: 'get',
      path: KEYS_PATH,
      tag: 'Keys',
      summary:
        'The service’s Ed25519 public keys (JWK set) for verifying signed ledger checkpoints and consent receipts offline',
      responses: { 200: { description: 'JWK set', schema: z.object({ keys: z.array(jwk) }) } },
    });
  },
};
