// Verifies one issuer's JWT access tokens (RFC 7519, RFC 8725, RFC 9068) with jose and maps every
// jose outcome to our closed DenyCode union. The key getter is ours (see key-set.ts), and so is
// the signature arithmetic (jws-signature.ts: node:crypto instead of a WebCrypto thread-pool job).
// jose parses the header, picks and imports the key, and validates the claims.
//
// Checked: signature with a key from the issuer's JWKS; `alg` in the allowlist (asymmetric only,
// so `none` and HMAC never pass); unknown `crit` rejected; `iss` exact; `aud` contains the
// configured audience (string or array); `exp` required; `nbf` and `iat` within the tolerance;
// `typ` (RFC 9068 `at+jwt` unless the issuer opts out); a lifetime no longer than `maxTokenAge`
// (RFC 7519 sets no upper bound on `exp`, so a token minted for a hundred years would otherwise
// outlive every key rotation and revocation plan); then the issuer preset's discriminators
// (presets.ts: claims required or refused, so ID, logout and refresh tokens stay out) and, for
// Cognito, the audience in `client_id`.
// Deliberately not used: `jku`, `x5u`, `jwk`, `x5c` headers — keys come only from the JWKS.
import { decodeJwt, decodeProtectedHeader, errors, type JWTPayload } from 'jose';
import type { JwtIssuer } from '../config/model.js';
import { readJkt } from './confirmation.js';
import { VerifyError, type DenyCode } from '../errors.js';
import { readIdentity } from './identity.js';
import { checkProtectedHeader, validateClaims } from './jwt-claims.js';
import type { KeySet } from './key-set.js';
import { signatureScheme, verificationKey, verifySignature } from './jws-signature.js';
import { checkTokenKind, soleAudienceReason } from '../config/presets.js';
import { looksLikeJwt } from './token-shape.js';
import { readSessionClaims, type VerifiedToken } from './verified-token.js';

export type JwtVerifier = (token: string) => Promise<VerifiedToken>;

export function createJwtVerifier(
  config: JwtIssuer,
  keySet: KeySet,
  now: () => number,
): JwtVerifier {
  // `audienceClaim: client_id` (Cognito): jose checks no `aud`; checkAudienceClaim does below.
  const baseOptions = {
    issuer: config.issuer,
    ...(config.audienceClaim === 'aud' ? { audience: config.audience } : {}),
    clockTolerance: config.clockTolerance,
    requiredClaims: ['exp'],
    ...(config.requireTyp === undefined ? {} : { typ: config.requireTyp }),
  };
  const schemes = new Map(
    config.algorithms.map((alg) => {
      const scheme = signatureScheme(alg);
      if (scheme === undefined) throw new TypeError(`no signature scheme for "${alg}"`);
      return [alg, scheme] as const;
    }),
  );

  /** jose's order: header, `crit`, `alg` allowed, key, signature, then the claims. */
  return async function verifyJwt(token) {
    const at = now();
    let payload: JWTPayload;
    let kid: unknown;
    try {
      if (!looksLikeJwt(token)) throw new errors.JWSInvalid('Invalid Compact JWS');
      let header: ReturnType<typeof decodeProtectedHeader>;
      try {
        header = decodeProtectedHeader(token);
      } catch {
        throw new errors.JWSInvalid('JWS Protected Header is invalid');
      }
      const scheme = schemes.get(checkProtectedHeader(header, schemes))!;
      const key = verificationKey(await keySet.getKey(header), scheme);
      if (key === undefined)
        throw new VerifyError('alg_not_allowed', 'the token uses an unsupported algorithm or key');
      if (!verifySignature(token, scheme, key)) throw new errors.JWSSignatureVerificationFailed();
      payload = validateClaims(token, header, { ...baseOptions, currentDate: new Date(at) });
      kid = header.kid;
    } catch (error) {
      throw withPresetReason(toVerifyError(error), token, config);
    }
    if (typeof payload.iat === 'number' && payload.iat > at / 1000 + config.clockTolerance) {
      throw new VerifyError('claim_invalid', '"iat" claim is in the future');
    }
    checkLifetime(payload.exp!, payload.iat, at / 1000, config);
    const claims = payload as Record<string, unknown>;
    checkTokenKind(claims, config);
    if (config.audienceClaim !== 'aud') checkAudienceClaim(claims, config);
    return {
      jkt: readJkt(claims.cnf),
      identity: readIdentity(claims, config),
      session: readSessionClaims(claims),
      exp: payload.exp!,
      nbf: typeof payload.nbf === 'number' ? payload.nbf - config.clockTolerance : undefined,
      kid: typeof kid === 'string' ? kid : undefined,
      keyTrustedUntil: keySet.trustedUntil() / 1000,
    };
  };
}

/** The audience in another claim than `aud` (Cognito's `client_id`): a string or an array. */
function checkAudienceClaim(claims: Record<string, unknown>, config: JwtIssuer): void {
  const value = claims[config.audienceClaim];
  const values = Array.isArray(value) ? (value as unknown[]) : [value];
  if (!values.includes(config.audience))
    throw new VerifyError(
      'audience_mismatch',
      `"${config.audienceClaim}" claim does not contain the configured audience`,
    );
}

/** A preset's own wording for an audience it refuses (Keycloak's bare `account`). */
function withPresetReason(error: VerifyError, token: string, config: JwtIssuer): VerifyError {
  if (error.code !== 'audience_mismatch') return error;
  let aud: unknown;
  try {
    aud = decodeJwt(token).aud;
  } catch {
    return error;
  }
  const reason = soleAudienceReason(config.preset, aud);
  return reason === undefined ? error : new VerifyError('audience_mismatch', reason);
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
 * jose's error classes (and the key set's VerifyErrors) → our codes; the message keeps jose's
 * wording, which names the claim. Anything else is a bug, rethrown so that the caller answers it
 * as `internal_error`, never as a token outcome. The receivers of revocation/ share this mapping.
 */
export function toVerifyError(error: unknown): VerifyError {
  if (error instanceof VerifyError) return error;
  const fail = (code: DenyCode, message: string) => new VerifyError(code, message);
  // `iat` when a `maxTokenAge` was exceeded, else `exp`.
  if (error instanceof errors.JWTExpired)
    return fail('token_expired', `"${error.claim}" claim timestamp check failed`);
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
  if (error instanceof errors.JWKSNoMatchingKey || error instanceof errors.JWKSMultipleMatchingKeys)
    return fail('key_unknown', 'no key matches the token');
  if (error instanceof errors.JOSENotSupported) {
    return /crit|extension/i.test(error.message)
      ? fail('crit_unsupported', '"crit" names an extension that is not understood')
      : fail('alg_not_allowed', 'the token uses an unsupported algorithm or key');
  }
  if (error instanceof errors.JOSEError)
    return fail('token_malformed', 'the token is not a valid JWS/JWT');
  // No token outcome but a bug: the authorizer answers it as `internal_error`.
  throw error;
}
