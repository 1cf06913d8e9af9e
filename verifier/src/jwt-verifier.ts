// Verifies one issuer's JWT access tokens (RFC 7519, RFC 8725, RFC 9068) with jose and maps every
// jose outcome to our closed DenyCode union. Only the key getter is ours (see key-set.ts).
//
// Checked: signature with a key from the issuer's JWKS; `alg` in the allowlist (asymmetric only,
// so `none` and HMAC never pass); unknown `crit` rejected; `iss` exact; `aud` contains the
// configured audience (string or array); `exp` required; `nbf` and `iat` within the tolerance;
// `typ` (RFC 9068 `at+jwt` unless the issuer opts out); a lifetime no longer than `maxTokenAge`
// (RFC 7519 sets no upper bound on `exp`, so a token minted for a hundred years would otherwise
// outlive every key rotation and revocation plan).
// Deliberately not used: `jku`, `x5u`, `jwk`, `x5c` headers — keys come only from the JWKS.
import { errors, jwtVerify, type JWTPayload } from 'jose';
import type { JwtIssuer } from './config-types.js';
import { VerifyError, type DenyCode } from './errors.js';
import { readIdentity } from './identity.js';
import type { KeySet } from './key-set.js';
import type { VerifiedToken } from './verified-token.js';

export type JwtVerifier = (token: string) => Promise<VerifiedToken>;

export function createJwtVerifier(
  config: JwtIssuer,
  keySet: KeySet,
  now: () => number,
): JwtVerifier {
  const baseOptions = {
    issuer: config.issuer,
    audience: config.audience,
    algorithms: [...config.algorithms],
    clockTolerance: config.clockTolerance,
    requiredClaims: ['exp'],
    ...(config.requireTyp === undefined ? {} : { typ: config.requireTyp }),
  };
  const getKey = (header: Parameters<KeySet['getKey']>[0]) => keySet.getKey(header);

  return async function verifyJwt(token) {
    const at = now();
    let payload: JWTPayload;
    let kid: unknown;
    try {
      ({
        payload,
        protectedHeader: { kid },
      } = await jwtVerify(token, getKey, { ...baseOptions, currentDate: new Date(at) }));
    } catch (error) {
      throw toVerifyError(error);
    }
    if (typeof payload.iat === 'number' && payload.iat > at / 1000 + config.clockTolerance) {
      throw new VerifyError('claim_invalid', '"iat" claim is in the future');
    }
    checkLifetime(payload.exp!, payload.iat, at / 1000, config);
    const claims = payload as Record<string, unknown>;
    return {
      jkt: readJkt(claims.cnf),
      identity: readIdentity(claims, config),
      exp: payload.exp!,
      nbf: typeof payload.nbf === 'number' ? payload.nbf - config.clockTolerance : undefined,
      kid: typeof kid === 'string' ? kid : undefined,
    };
  };
}

/** `exp` at most `maxTokenAge` after `iat` (when given) and after now, both with the tolerance. */
function checkLifetime(exp: number, iat: unknown, nowSeconds: number, config: JwtIssuer): void {
  const longest = config.maxTokenAge + config.clockTolerance;
  if (exp - nowSeconds > longest)
    throw new VerifyError(
      'claim_invalid',
      '"exp" claim is further ahead than the longest token age',
    );
  if (typeof iat === 'number' && exp - iat > longest)
    throw new VerifyError(
      'claim_invalid',
      '"exp" minus "iat" is longer than the longest token age',
    );
}

/**
 * `cnf.jkt` (RFC 9449 §6.1), undefined for an unbound token. A `cnf` this gate cannot honour
 * (another confirmation method, a malformed thumbprint) refuses the token: accepting it as a
 * bearer token would drop the binding its issuer asked for.
 */
export function readJkt(cnf: unknown): string | undefined {
  if (cnf === undefined) return undefined;
  if (cnf !== null && typeof cnf === 'object' && !Array.isArray(cnf)) {
    const { jkt } = cnf as Record<string, unknown>;
    if (typeof jkt === 'string' && /^[A-Za-z0-9_-]{43}$/.test(jkt)) return jkt;
  }
  throw new VerifyError(
    'claim_invalid',
    '"cnf" claim is not a DPoP key binding this gate understands',
  );
}

/** jose's error classes → our codes; the message keeps jose's wording, which names the claim. */
function toVerifyError(error: unknown): VerifyError {
  if (error instanceof VerifyError) return error;
  const fail = (code: DenyCode, message: string) => new VerifyError(code, message);
  if (error instanceof errors.JWTExpired)
    return fail('token_expired', '"exp" claim timestamp check failed');
  if (error instanceof errors.JWTClaimValidationFailed) {
    switch (error.claim) {
      case 'nbf':
        return fail('token_not_yet_valid', '"nbf" claim timestamp check failed');
      case 'aud':
        return fail('audience_mismatch', '"aud" claim does not contain the configured audience');
      case 'typ':
        return fail('typ_mismatch', '"typ" header does not match the required value');
      case 'iss':
        return fail('issuer_unknown', '"iss" claim does not match the issuer');
      default:
        return fail('claim_invalid', `"${error.claim}" claim is invalid (${error.reason})`);
    }
  }
  if (error instanceof errors.JOSEAlgNotAllowed)
    return fail('alg_not_allowed', '"alg" is not allowed');
  if (error instanceof errors.JWSSignatureVerificationFailed)
    return fail('signature_invalid', 'signature verification failed');
  if (error instanceof errors.JWKSNoMatchingKey)
    return fail('key_unknown', 'no key matches the token');
  if (error instanceof errors.JOSENotSupported) {
    return /crit|extension/i.test(error.message)
      ? fail('crit_unsupported', '"crit" names an extension that is not understood')
      : fail('alg_not_allowed', 'the token uses an unsupported algorithm or key');
  }
  if (error instanceof errors.JOSEError)
    return fail('token_malformed', 'the token is not a valid JWS/JWT');
  return fail('signature_invalid', 'the token could not be verified');
}
