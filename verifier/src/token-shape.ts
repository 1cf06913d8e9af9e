// Cheap checks that run before any hashing, crypto or fetch (RFC 8725 §3.1, DESIGN.md "JWT
// checks"): a size cap, the Bearer syntax of RFC 6750 §2.1 and the three base64url segments.
import { MAX_TOKEN_BYTES } from './config-types.js';
import { VerifyError } from './errors.js';

const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;
const JWS_COMPACT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/**
 * The token from an `Authorization` header, or undefined when none was sent. Another scheme
 * (Basic, DPoP) counts as no bearer token, which RFC 6750 §3.1 answers without an error code.
 */
export function readBearer(authorization: string | undefined): string | undefined {
  if (authorization === undefined || authorization.length === 0) return undefined;
  if (authorization.length > MAX_TOKEN_BYTES + 16) {
    throw new VerifyError('token_too_large', `token is larger than ${MAX_TOKEN_BYTES} bytes`);
  }
  if (!/^bearer(?: |$)/i.test(authorization)) return undefined;
  const match = BEARER.exec(authorization);
  if (!match) throw new VerifyError('token_malformed', 'Authorization is not "Bearer <token>"');
  const token = match[1]!;
  if (token.length > MAX_TOKEN_BYTES) {
    throw new VerifyError('token_too_large', `token is larger than ${MAX_TOKEN_BYTES} bytes`);
  }
  return token;
}

/** True for the JWS compact serialisation; false means an opaque token. */
export function looksLikeJwt(token: string): boolean {
  return JWS_COMPACT.test(token);
}
