// Cheap checks before any hashing, crypto or fetch (RFC 8725 §3.1; verifier/README.md "What is
// checked"): a size cap, the Bearer syntax of RFC 6750 §2.1 and the three base64url segments.
import { VerifyError } from '../errors.js';

/**
 * Tokens larger than this are refused before any parsing (RFC 8725 hygiene; 16 KiB): room for the
 * access tokens IdPs issue with group, role or `authorization_details` claims, still a bound on
 * what a refusal hashes (the DPoP `ath`, the cache key) and what reaches a log (never the token).
 */
export const MAX_TOKEN_BYTES = 16_384;

const BEARER_PREFIX = /^bearer(?: |$)/i;
const DPOP_PREFIX = /^dpop(?: |$)/i;
const TOKEN68 = /^[A-Za-z0-9\-._~+/]+=*$/;
const JWS_COMPACT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
const TOO_LARGE = () =>
  new VerifyError('token_too_large', `token is larger than ${MAX_TOKEN_BYTES} bytes`);

export interface Credentials {
  /** `bearer` (RFC 6750) or `dpop` (RFC 9449 §7.1). */
  readonly scheme: 'bearer' | 'dpop';
  readonly token: string;
}

/**
 * The scheme and token of an `Authorization` header, or undefined when none was sent. Another
 * scheme (Basic, or DPoP unless `dpop`) counts as no token (RFC 6750 §3.1: no error code). Only
 * the size is checked, so a cache hit never scans the token (`assertBearerSyntax` does, later).
 */
export function readCredentials(
  authorization: string | undefined,
  dpop: boolean,
): Credentials | undefined {
  if (authorization === undefined || authorization.length === 0) return undefined;
  if (authorization.length > MAX_TOKEN_BYTES + 64) throw TOO_LARGE();
  let scheme: Credentials['scheme'];
  if (BEARER_PREFIX.test(authorization)) scheme = 'bearer';
  else if (dpop && DPOP_PREFIX.test(authorization)) scheme = 'dpop';
  else return undefined;
  const token = tokenAfterScheme(authorization, scheme.length);
  if (token.length === 0)
    throw new VerifyError(
      'token_malformed',
      `Authorization is "${scheme === 'bearer' ? 'Bearer' : 'DPoP'}" without a token`,
    );
  if (token.length > MAX_TOKEN_BYTES) throw TOO_LARGE();
  return { scheme, token };
}

/**
 * What follows the scheme, without the spaces that separate it (RFC 6750 §2.1: `1*SP`) and the
 * spaces and tabs a field value may end with (RFC 9110 §5.6.3 OWS). Not `String.trim`: that also
 * strips \v, \f, U+00A0, U+FEFF and the other Unicode spaces, none of which HTTP removes, so
 * one token would have endless spellings (each its own edge-cache entry). A loop, not a regex: an
 * anchored `[ \t]+$` is quadratic on a header of many space runs.
 */
function tokenAfterScheme(authorization: string, from: number): string {
  let start = from;
  while (authorization.charCodeAt(start) === 0x20) start++;
  let end = authorization.length;
  while (end > start && isOws(authorization.charCodeAt(end - 1))) end--;
  return authorization.slice(start, end);
}

const isOws = (code: number) => code === 0x20 || code === 0x09;

/** RFC 6750 §2.1 `b64token` syntax. */
export function assertBearerSyntax(token: string): void {
  if (!TOKEN68.test(token))
    throw new VerifyError(
      'token_malformed',
      'the bearer token has characters outside RFC 6750 b64token',
    );
}

/** True for the JWS compact serialisation; false means an opaque token. */
export function looksLikeJwt(token: string): boolean {
  return JWS_COMPACT.test(token);
}

/**
 * `jws.lastIndexOf('.')`, found forwards: V8's `indexOf` is a builtin that scans like memchr, its
 * `lastIndexOf` a runtime call that cost ~2,000 instructions on a 700-character token (a compact
 * JWS has two dots, so this is three `indexOf`s).
 */
export function lastDot(jws: string): number {
  let dot = jws.indexOf('.');
  if (dot === -1) return -1;
  for (let next = jws.indexOf('.', dot + 1); next !== -1; next = jws.indexOf('.', dot + 1))
    dot = next;
  return dot;
}

const BASE64URL_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
/** The bits of the last character no byte uses, by the segment's length mod 4 (RFC 4648 §3.5). */
const UNUSED_BITS = [0, -1, 0b1111, 0b11] as const;

/**
 * True when the last segment of a compact JWS (its signature) is the one base64url spelling of its
 * bytes: no character left over (length mod 4 ≠ 1) and the unused low bits of the last one zero.
 * Decoders ignore those bits, so a 256-byte RS256 signature has 16 spellings that all verify; each
 * would miss both decision caches and need its own DPoP `ath`. Only the signature can vary: the
 * header and payload are signed as spelled.
 */
export function hasCanonicalSignature(jws: string): boolean {
  return isCanonicalFrom(jws, lastDot(jws) + 1);
}

/** `hasCanonicalSignature`, for a caller that has found where the signature starts already. */
export function isCanonicalFrom(jws: string, start: number): boolean {
  const unused = UNUSED_BITS[(jws.length - start) % 4]!;
  if (unused <= 0) return unused === 0;
  return (BASE64URL_ALPHABET.indexOf(jws.charAt(jws.length - 1)) & unused) === 0;
}

/**
 * The unchecked `iss` of a JWT-shaped token, which only picks the issuer that verifies it (Node's
 * base64url decoder: a fraction of jose's decodeJwt). Throws when the payload is no JSON object.
 */
export function unverifiedIssuer(token: string): unknown {
  const start = token.indexOf('.') + 1;
  const segment = token.slice(start, token.indexOf('.', start));
  const claims: unknown = JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'));
  if (claims === null || typeof claims !== 'object' || Array.isArray(claims))
    throw new TypeError('the payload is not a JSON object');
  return (claims as { iss?: unknown }).iss;
}
