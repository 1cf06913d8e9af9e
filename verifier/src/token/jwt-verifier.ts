// One issuer's JWT access tokens (RFC 7519, RFC 8725, RFC 9068), every jose outcome mapped to a
// DenyCode. jose parses the header and the claims; keys (key-set.ts) and signatures are ours.
import { errors, type JWTPayload } from 'jose';
import type { JwtIssuer } from '../config/model.js';
import { soleAudienceReason } from '../config/presets.js';
import { VerifyError, type DenyCode } from '../errors.js';
import { readIdentity } from './identity.js';
import { checkProtectedHeader, readProtectedHeader, validateClaims } from './jwt-claims.js';
import type { KeySet } from './key-set.js';
import { signatureSchemes, verificationKey, verifySignature } from './jws-signature.js';
import {
  checkAudience,
  checkTokenKind,
  readAuthentication,
  readJkt,
  readSessionClaims,
  type VerifiedToken,
} from './verified-token.js';

export type JwtVerifier = (token: string) => Promise<VerifiedToken>;

const claimInvalid = (message: string) => new VerifyError('claim_invalid', message);

/**
 * Checked, in jose's order: the header (`crit` understood, `alg` in the asymmetric allowlist, so
 * never `none` or HMAC); the signature, by a key of the issuer's JWKS only (never `jku`, `x5u`,
 * `jwk`, `x5c`); `iss` exact, `aud`, `exp` required, `nbf` and `iat` within the tolerance, `typ`
 * (RFC 9068 `at+jwt` unless opted out). Then a lifetime within `maxTokenAge` (a century-long `exp`
 * would outlive every key rotation), the preset's discriminators (presets.ts: no ID, logout or
 * refresh tokens) and, for Cognito, the audience in `client_id`. With `authentication`, the step-up
 * claims are kept for decision/step-up.ts.
 */
export function createJwtVerifier(
  config: JwtIssuer,
  keySet: KeySet,
  now: () => number,
  { authentication = false } = {},
): JwtVerifier {
  const { audience, audienceClaim, clockTolerance } = config;
  const options = {
    issuer: config.issuer,
    // `audienceClaim: client_id` (Cognito): jose checks no `aud`; the verifier does below.
    audience: audienceClaim === 'aud' ? audience : undefined,
    clockTolerance,
    requiredClaims: ['exp'],
    typ: config.requireTyp,
  };
  const schemes = signatureSchemes(config.algorithms);
  const longest = config.maxTokenAge + clockTolerance;

  return async function verifyJwt(token) {
    const at = now();
    let payload: JWTPayload;
    let header: ReturnType<typeof readProtectedHeader>;
    try {
      header = readProtectedHeader(token);
      if (header === undefined) throw new errors.JWSInvalid('Invalid Compact JWS');
      const scheme = schemes.get(checkProtectedHeader(header, schemes))!;
      const key = verificationKey(await keySet.getKey(header), scheme);
      if (key === undefined)
        throw new VerifyError('alg_not_allowed', 'the token uses an unsupported algorithm or key');
      if (!verifySignature(token, scheme, key)) throw new errors.JWSSignatureVerificationFailed();
      payload = validateClaims(token, header, { ...options, currentDate: new Date(at) });
    } catch (error) {
      // A preset's own wording for an audience it refuses (Keycloak's bare `account`).
      const aud = error instanceof errors.JWTClaimValidationFailed && error.claim === 'aud';
      const reason = aud ? soleAudienceReason(config.preset, error.payload.aud) : undefined;
      throw reason === undefined
        ? withExpectation(toVerifyError(error), config)
        : new VerifyError('audience_mismatch', reason);
    }
    const claims = payload as Record<string, unknown>;
    const { exp, iat } = payload as { exp: number; iat: unknown };
    if (typeof iat === 'number' && iat > at / 1000 + clockTolerance)
      throw claimInvalid('"iat" claim is in the future');
    // `exp` at most `maxTokenAge` after now and after `iat` (when given), both with the tolerance.
    if (exp - at / 1000 > longest)
      throw claimInvalid('"exp" claim is further ahead than the longest token age');
    if (typeof iat === 'number' && exp - iat > longest)
      throw claimInvalid('"exp" minus "iat" is longer than the longest token age');
    checkTokenKind(claims, config);
    if (audienceClaim !== 'aud')
      checkAudience(claims[audienceClaim], audience, `"${audienceClaim}" claim`);
    return {
      jkt: readJkt(claims.cnf),
      identity: readIdentity(claims, config),
      session: readSessionClaims(claims),
      authentication: authentication
        ? readAuthentication(claims, config, clockTolerance)
        : undefined,
      exp,
      nbf: typeof payload.nbf === 'number' ? payload.nbf - clockTolerance : undefined,
      kid: typeof header.kid === 'string' ? header.kid : undefined,
      keyTrustedUntil: keySet.trustedUntil() / 1000,
    };
  };
}

/**
 * The refusal with what this issuer expected, for the log line an operator reads when an IdP's
 * tokens do not fit (`aud` not the `--audience`, another `typ`): configuration, never the token.
 */
function withExpectation(error: VerifyError, config: JwtIssuer): VerifyError {
  const expected: Partial<Record<DenyCode, string>> = {
    audience_mismatch: `expected "${config.audience}"`,
    typ_mismatch: `expected "${config.requireTyp}"`,
    issuer_unknown: `expected "${config.issuer}"`,
    alg_not_allowed: `expected one of ${config.algorithms.join(', ')}`,
  };
  const expectation = expected[error.code];
  return expectation === undefined
    ? error
    : new VerifyError(error.code, `${error.message}: ${expectation}`);
}

/** A claim jose names in a JWTClaimValidationFailed → our code and message. */
const CLAIM_FAILURES = new Map<string, readonly [DenyCode, string]>([
  ['nbf', ['token_not_yet_valid', '"nbf" claim timestamp check failed']],
  ['aud', ['audience_mismatch', '"aud" claim does not contain the configured audience']],
  ['typ', ['typ_mismatch', '"typ" header does not match the required value']],
  ['iss', ['issuer_unknown', '"iss" claim does not match the issuer']],
]);

/**
 * jose's errors (and our own VerifyErrors: the key set's, checkCrit's) → our codes, in jose's
 * wording that names the claim; anything else is a bug, rethrown (`internal_error`). revocation/'s
 * receivers share it, and run checkCrit before jose's jwtVerify.
 */
export function toVerifyError(error: unknown): VerifyError {
  if (error instanceof VerifyError) return error;
  const fail = (code: DenyCode, message: string) => new VerifyError(code, message);
  // `iat` when a `maxTokenAge` was exceeded, else `exp`.
  if (error instanceof errors.JWTExpired)
    return fail('token_expired', `"${error.claim}" claim timestamp check failed`);
  if (error instanceof errors.JWTClaimValidationFailed) {
    const known = CLAIM_FAILURES.get(error.claim);
    return known === undefined
      ? fail('claim_invalid', `"${error.claim}" claim is invalid (${error.reason})`)
      : fail(...known);
  }
  if (error instanceof errors.JOSEAlgNotAllowed)
    return fail('alg_not_allowed', '"alg" is not allowed');
  if (error instanceof errors.JWSSignatureVerificationFailed)
    return fail('signature_invalid', 'signature verification failed');
  if (error instanceof errors.JWKSNoMatchingKey || error instanceof errors.JWKSMultipleMatchingKeys)
    return fail('key_unknown', 'no key matches the token');
  if (error instanceof errors.JOSENotSupported)
    return fail('alg_not_allowed', 'the token uses an unsupported algorithm or key');
  if (error instanceof errors.JOSEError)
    return fail('token_malformed', 'the token is not a valid JWS/JWT');
  throw error;
}
