// One issuer's JWT access tokens (RFC 7519, RFC 8725, RFC 9068), every jose outcome mapped to a
// DenyCode. jose's rules for the header and the claims (jwt-claims.ts), its key matching
// (key-set.ts); the signature is node:crypto's (jws-signature.ts). With the key already known the
// whole check is synchronous: no promise and no microtask for a new token.
import { errors } from 'jose';
import type { Clock, EpochSeconds } from '../clock.js';
import type { JwtIssuer } from '../config/model.js';
import { soleAudienceReason } from '../config/presets.js';
import { VerifyError, type DenyCode } from '../errors.js';
import { carryLogTrace } from '../tracing/log-trace.js';
import { readIdentity } from './identity.js';
import {
  checkClaims,
  checkProtectedHeader,
  decodeClaims,
  readProtectedHeader,
  type DecodedClaims,
} from './jwt-claims.js';
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

/**
 * Verifies a token; `decoded`, its claims when the caller decoded them already (token-verifier.ts
 * routes by `iss`), so the payload is read once. Synchronous when the key is known, else a promise.
 */
export type JwtVerifier = (
  token: string,
  decoded?: DecodedClaims,
) => VerifiedToken | Promise<VerifiedToken>;

/** What a JWT verifier reads of a key set; a source without `knownKey` is always waited for. */
export type KeySource = Pick<KeySet, 'getKey' | 'trustedUntilSeconds' | 'knownKey'>;

type Header = Readonly<Record<string, unknown>>;

const claimInvalid = (message: string) => new VerifyError('claim_invalid', message);
const NOT_JWS = () => new errors.JWSInvalid('Invalid Compact JWS');
/** Protected headers of tokens whose signature held, by their base64url text: an issuer has few. */
const KNOWN_HEADERS = 64;

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
  keySet: KeySource,
  now: Clock,
  { authentication = false } = {},
): JwtVerifier {
  const { audience, audienceClaim, clockTolerance } = config;
  const rules = {
    issuer: config.issuer,
    // `audienceClaim: client_id` (Cognito): jose checks no `aud`; the verifier does below.
    audience: audienceClaim === 'aud' ? audience : undefined,
    clockTolerance,
    requiredClaims: ['exp'],
    typ: config.requireTyp,
  };
  const schemes = signatureSchemes(config.algorithms);
  const longest = config.maxTokenAge + clockTolerance;
  /**
   * Headers are parsed once per spelling, but remembered only once a signature under them held:
   * a stream of made-up headers cannot fill the map.
   */
  const headers = new Map<string, Header>();

  /** The refusal of this issuer's token, in our codes (and a preset's wording for `aud`). */
  function refused(error: unknown): VerifyError {
    const aud = error instanceof errors.JWTClaimValidationFailed && error.claim === 'aud';
    const reason = aud ? soleAudienceReason(config.preset, error.payload.aud) : undefined;
    return reason === undefined
      ? withExpectation(toVerifyError(error), config)
      : new VerifyError('audience_mismatch', reason);
  }

  /** The signature by `cryptoKey`, then the claims: what is left once the key is in hand. */
  function finish(
    token: string,
    header: Header,
    alg: string,
    cryptoKey: Parameters<typeof verificationKey>[0],
    decoded: DecodedClaims | undefined,
    at: EpochSeconds,
  ): VerifiedToken {
    let claims: Readonly<Record<string, unknown>>;
    try {
      const scheme = schemes.get(alg)!;
      const key = verificationKey(cryptoKey, scheme);
      if (key === undefined)
        throw new VerifyError('alg_not_allowed', 'the token uses an unsupported algorithm or key');
      if (!verifySignature(token, scheme, key)) throw new errors.JWSSignatureVerificationFailed();
      const segment = token.slice(0, token.indexOf('.'));
      if (headers.size < KNOWN_HEADERS && !headers.has(segment))
        headers.set(segment, Object.freeze(header));
      const payload = decoded ?? decodeClaims(token);
      if (payload === undefined)
        throw new errors.JWTInvalid('JWT Claims Set must be a top-level JSON object');
      claims = checkClaims(payload, header, rules, at);
    } catch (error) {
      throw refused(error);
    }
    const { exp, iat, nbf } = claims as { exp: number; iat: unknown; nbf: unknown };
    if (typeof iat === 'number' && iat > at + clockTolerance)
      throw claimInvalid('"iat" claim is in the future');
    // `exp` at most `maxTokenAge` after now and after `iat` (when given), both with the tolerance.
    if (exp - at > longest)
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
      nbf: typeof nbf === 'number' ? nbf - clockTolerance : undefined,
      kid: typeof header.kid === 'string' ? header.kid : undefined,
      keyTrustedUntil: keySet.trustedUntilSeconds(),
    };
  }

  /** The key from the set (a fetch, or jose's import), then `finish`. */
  async function awaitKey(
    token: string,
    header: Header,
    alg: string,
    decoded: DecodedClaims | undefined,
    at: EpochSeconds,
  ): Promise<VerifiedToken> {
    let cryptoKey;
    try {
      cryptoKey = await keySet.getKey(header);
    } catch (error) {
      throw refused(error);
    }
    return finish(token, header, alg, cryptoKey, decoded, at);
  }

  return function verifyJwt(token, decoded) {
    const at = now();
    let header: Header | undefined;
    let alg: string;
    try {
      const dot = token.indexOf('.');
      header = dot > 0 ? headers.get(token.slice(0, dot)) : undefined;
      header ??= readProtectedHeader(token);
      if (header === undefined) throw NOT_JWS();
      alg = checkProtectedHeader(header, schemes);
    } catch (error) {
      throw refused(error);
    }
    const known = keySet.knownKey?.(header);
    // A key to wait for: the request's trace goes with the fetch (tracing/log-trace.ts).
    return known === undefined
      ? carryLogTrace(awaitKey, token, header, alg, decoded, at)
      : finish(token, header, alg, known, decoded, at);
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
