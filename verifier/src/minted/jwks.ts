// The public keys of the gate-signed `jwt` values (docs/minted/jwt.md), as one JWKS a downstream
// service fetches to check them: NGINX routes GET /.well-known/secret-gate/jwks.json here, with no
// token. Only public parts leave (the minting package's `publicJwks()`); a shared-secret (HS256)
// value has none. Read per request, so a rotated key file shows within the package's re-read.
import type { Answer } from '../decision/decision.js';
import type { PublicJwk } from './minter-api.js';

/** The verifier's page path; NGINX's location has the same. */
export const MINTED_JWKS_PATH = '/.well-known/secret-gate/jwks.json';
/** Briefly cacheable: a rotation keeps the previous key published, so 5 minutes is safe. */
const CACHE_CONTROL = 'public, max-age=300';

/** The page answering every source's public keys, once per `kid`. */
export function createMintedJwksPage(
  sources: readonly (() => readonly PublicJwk[])[],
): () => Answer {
  return () => {
    const keys = new Map<string, PublicJwk>();
    for (const source of sources)
      for (const key of source()) keys.set(key.kid ?? JSON.stringify(key), key);
    return {
      status: 200,
      headers: [
        ['Content-Type', 'application/jwk-set+json'],
        ['Cache-Control', CACHE_CONTROL],
      ],
      body: JSON.stringify({ keys: [...keys.values()] }),
    };
  };
}
