// The independent half of the fuzz targets' "never accepts an unsigned or garbage token": an input
// a parser accepted must be a compact JWS that jose's own compactVerify (not the verifier's
// node:crypto path, jws-signature.ts) verifies with a trusted key, under an asymmetric `alg`.
import {
  compactVerify,
  createLocalJWKSet,
  decodeProtectedHeader,
  EmbeddedJWK,
  type JWK,
} from 'jose';

/** Every asymmetric JWS `alg` jose verifies: never `none`, never HMAC. */
const ASYMMETRIC = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512'].concat([
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
]);

/** True when `input` verifies with one of `keys` (by `kid`, as a JWKS is searched). */
export async function signedByOneOf(input: string, keys: JWK[]): Promise<boolean> {
  const keySet = createLocalJWKSet({ keys });
  try {
    await compactVerify(input, keySet, { algorithms: ASYMMETRIC });
    return true;
  } catch {
    return false;
  }
}

/**
 * True when `input` verifies with the public key in its own `jwk` header (a DPoP proof, RFC 9449
 * §4.2), and that header holds no private member: a proof carrying its private key is refused.
 */
export async function signedByEmbeddedPublicKey(input: string): Promise<boolean> {
  try {
    const { jwk } = decodeProtectedHeader(input);
    if (jwk === undefined || 'd' in jwk) return false;
    await compactVerify(input, EmbeddedJWK, { algorithms: ASYMMETRIC });
    return true;
  } catch {
    return false;
  }
}
