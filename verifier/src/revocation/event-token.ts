// What logout tokens (OIDC Back-Channel Logout 1.0 §2.4) and Security Event Tokens (RFC 8417, the
// SSF SET profile) share: a JWS by the sender's keys (jose's jwtVerify with our key set), an exact
// `iss`, an `aud` naming us, an explicit `typ`, a `jti`, an `iat`, and an `events` object. The
// callers add their own rules (logout-token.ts, set-token.ts).
import { decodeProtectedHeader, errors, jwtVerify, type JWTPayload } from 'jose';
import type { KeySet } from '../token/key-set.js';
import { VerifyError } from '../errors.js';
import { ReceiverError } from './receiver-error.js';

/** No sender needs more: a logout token is a few hundred bytes, a SET rarely over 2 KiB. */
export const MAX_EVENT_TOKEN_BYTES = 8192;

export interface EventTokenRules {
  readonly issuer: string;
  readonly audiences: readonly string[];
  readonly algorithms: readonly string[];
  readonly keys: KeySet;
  /** The media type without `application/` (`logout+jwt`, `secevent+jwt`). */
  readonly typ: string;
  /** True: the header must carry `typ`; false: checked only when present (BCL §2.4). */
  readonly typRequired: boolean;
  readonly clockTolerance: number;
  /** Seconds; undefined: any age (queued SETs may be old). */
  readonly maxAge: number | undefined;
  readonly now: () => number;
}

export interface EventToken {
  readonly payload: JWTPayload & Record<string, unknown>;
  readonly jti: string;
  readonly iat: number;
  readonly events: Record<string, unknown>;
}

/** The unverified `iss`, only to pick the sender's rules; everything is verified afterwards. */
export function unverifiedSender(token: string): string {
  if (token.length > MAX_EVENT_TOKEN_BYTES)
    throw new ReceiverError(
      'token_malformed',
      `the token is longer than ${MAX_EVENT_TOKEN_BYTES} bytes`,
    );
  const parts = token.split('.');
  if (parts.length !== 3 || parts.some((part) => !/^[A-Za-z0-9_-]+$/.test(part)))
    throw new ReceiverError('token_malformed', 'the token is not a compact JWS');
  let payload: unknown;
  try {
    payload = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8'));
  } catch {
    throw new ReceiverError('token_malformed', 'the token payload is not JSON');
  }
  const iss = (payload as { iss?: unknown } | null)?.iss;
  if (typeof iss !== 'string') throw new ReceiverError('issuer_unknown', '"iss" claim is missing');
  return iss;
}

function typMatches(typ: unknown, expected: string): boolean {
  return typeof typ === 'string' && typ.toLowerCase().replace(/^application\//, '') === expected;
}

export async function verifyEventToken(token: string, rules: EventTokenRules): Promise<EventToken> {
  let header;
  try {
    header = decodeProtectedHeader(token);
  } catch {
    throw new ReceiverError('token_malformed', 'the JWS header is not valid');
  }
  if (header.typ === undefined ? rules.typRequired : !typMatches(header.typ, rules.typ))
    throw new ReceiverError('typ_mismatch', `"typ" header must be "${rules.typ}"`);
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(token, (protectedHeader) => rules.keys.getKey(protectedHeader), {
      issuer: rules.issuer,
      audience: [...rules.audiences],
      algorithms: [...rules.algorithms],
      clockTolerance: rules.clockTolerance,
      requiredClaims: ['iat', 'jti'],
      currentDate: new Date(rules.now()),
      ...(rules.maxAge === undefined ? {} : { maxTokenAge: rules.maxAge }),
    }));
  } catch (error) {
    throw fromJose(error);
  }
  const { jti, iat, events } = payload as Record<string, unknown>;
  if (typeof jti !== 'string' || jti.length === 0 || jti.length > 256)
    throw new ReceiverError('claim_invalid', '"jti" claim must be a string of 1 to 256 characters');
  if (typeof iat !== 'number' || iat > rules.now() / 1000 + rules.clockTolerance)
    throw new ReceiverError('claim_invalid', '"iat" claim is in the future');
  if (events === null || typeof events !== 'object' || Array.isArray(events))
    throw new ReceiverError('events_invalid', '"events" claim must be a JSON object');
  return {
    payload: payload,
    jti,
    iat,
    events: events as Record<string, unknown>,
  };
}

function fromJose(error: unknown): ReceiverError {
  if (error instanceof ReceiverError) return error;
  if (error instanceof VerifyError) {
    const reason = error.code === 'keys_unavailable' ? 'keys_unavailable' : 'key_unknown';
    return new ReceiverError(reason, error.message);
  }
  // jose reports a token older than `maxTokenAge` as expired too, naming `iat`.
  if (error instanceof errors.JWTExpired)
    return new ReceiverError('token_expired', `"${error.claim}" claim timestamp check failed`);
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === 'iss')
      return new ReceiverError('issuer_unknown', '"iss" claim does not match');
    if (error.claim === 'aud')
      return new ReceiverError('audience_mismatch', '"aud" claim does not name this receiver');
    return new ReceiverError(
      'claim_invalid',
      `"${error.claim}" claim is invalid (${error.reason})`,
    );
  }
  if (error instanceof errors.JOSEAlgNotAllowed)
    return new ReceiverError('alg_not_allowed', '"alg" is not allowed');
  if (error instanceof errors.JWSSignatureVerificationFailed)
    return new ReceiverError('signature_invalid', 'signature verification failed');
  if (error instanceof errors.JWKSNoMatchingKey || error instanceof errors.JWKSMultipleMatchingKeys)
    return new ReceiverError('key_unknown', 'no key matches the token');
  return new ReceiverError('token_malformed', 'the token is not a valid JWS/JWT');
}
