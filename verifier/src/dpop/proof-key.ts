// The public key a DPoP proof carries in its `jwk` header (RFC 9449 §4.2), judged by its members
// alone, before its thumbprint, its import or any signature work: a client chooses this key, so a
// key that would make the verifier's arithmetic slow (an RSA exponent as long as the modulus, an
// 8192-bit modulus) is refused as text.
import type { SignatureScheme } from '../token/jws-signature.js';

/** JWK members that only a private (or symmetric) key has (RFC 7518 §6). */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'] as const;
/** The RSA public exponent every current library generates (65537); any other is refused. */
const RSA_EXPONENT = 'AQAB';
const MAX_RSA_BITS = 4096;

const UNFIT = '"jwk" header is not a public key usable with "alg"';

/**
 * Why the `jwk` of a proof signed under `scheme` is refused, or undefined when it may be imported:
 * no private members; for RSA, `e` = 65537 and a modulus of 2048 (the scheme's minimum) to 4096
 * bits spelled in canonical base64url; for ECDSA, `kty: EC` on exactly the scheme's curve; for
 * EdDSA, `kty: OKP` and `crv: Ed25519`. The coordinates themselves are left to the import.
 */
export function proofKeyProblem(
  jwk: Readonly<Record<string, unknown>>,
  scheme: SignatureScheme,
): string | undefined {
  if (PRIVATE_MEMBERS.some((member) => member in jwk))
    return '"jwk" header must not carry private key members';
  const { name, namedCurve } = scheme.keyAlgorithm;
  if (name === 'ECDSA') return jwk.kty === 'EC' && jwk.crv === namedCurve ? undefined : UNFIT;
  if (name === 'Ed25519') return jwk.kty === 'OKP' && jwk.crv === 'Ed25519' ? undefined : UNFIT;
  if (jwk.kty !== 'RSA') return UNFIT;
  const bits = modulusBits(jwk.n);
  if (jwk.e !== RSA_EXPONENT || bits < (scheme.minRsaBits ?? 0) || bits > MAX_RSA_BITS)
    return `${UNFIT}: an RSA key needs the exponent 65537 ("AQAB") and a modulus of ${scheme.minRsaBits} to ${MAX_RSA_BITS} bits`;
  return undefined;
}

/** The bit length of a JWK modulus `n`; 0 unless canonical base64url with no leading zero byte. */
function modulusBits(n: unknown): number {
  // A 4096-bit modulus is 683 characters: a longer string is not decoded at all.
  if (typeof n !== 'string' || n.length > 683) return 0;
  const bytes = Buffer.from(n, 'base64url');
  if (bytes.length === 0 || bytes[0] === 0 || bytes.toString('base64url') !== n) return 0;
  return bytes.length * 8 - (Math.clz32(bytes[0]!) - 24);
}
