// jose's jwtVerify checks around a signature checked by jws-signature.ts: the protected header
// before any key is fetched, the claims after the signature held. Each segment is decoded once
// (Node's base64url decoder and one JSON.parse) and held to jose's rules; the claims are checked
// as jose's validateClaimsSet checks them, with its error classes, so outcomes map alike.
import { isUtf8 } from 'node:buffer';
import { errors } from 'jose';
import type { EpochSeconds } from '../clock.js';
import { VerifyError } from '../errors.js';
import { looksLikeJwt, MAX_TOKEN_BYTES } from './token-shape.js';

type Header = Readonly<Record<string, unknown>>;
export type Claims = Readonly<Record<string, unknown>>;

/** A JWT's claims, decoded once, and whether jose's stricter decoder would have read them too. */
export interface DecodedClaims {
  readonly claims: Claims;
  /**
   * False when Node's decoder read what jose's refuses: a character left over (length mod 4 = 1)
   * or bytes that are not UTF-8. Such a payload may still pick the issuer; after the signature it
   * is refused as jose refuses it (`token_malformed`).
   */
  readonly strict: boolean;
}

/** True when the first character after JSON's whitespace (RFC 8259 §2) is `{`. */
function opensObject(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === 0x7b) return true;
    if (code !== 0x20 && code !== 0x09 && code !== 0x0a && code !== 0x0d) return false;
  }
  return false;
}

/**
 * Where a segment's bytes are decoded before they become text: one buffer reused (decoding is
 * synchronous, and the text is a copy), about half the cost of a new Buffer per segment. A segment
 * too long for it (never a token under MAX_TOKEN_BYTES) gets a Buffer of its own.
 */
const scratch = Buffer.allocUnsafe(MAX_TOKEN_BYTES);

/** The JSON of one base64url segment (undefined when no JSON object), and its strictness. */
function decodeSegment(segment: string): DecodedClaims | undefined {
  let bytes: Buffer = scratch;
  let length: number;
  if (segment.length <= (scratch.length * 4) / 3) length = scratch.write(segment, 'base64url');
  else length = (bytes = Buffer.from(segment, 'base64url')).length;
  let text = bytes.toString('utf8', 0, length);
  // Each invalid sequence decodes to U+FFFD: text without one came from valid UTF-8.
  const utf8 = !text.includes('\ufffd') || isUtf8(bytes.subarray(0, length));
  // jose's TextDecoder drops a leading byte order mark; JSON.parse would refuse it.
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  // Only an object is wanted: anything that does not open one (random junk) is answered without
  // the SyntaxError JSON.parse would build, stack and all.
  if (!opensObject(text)) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return undefined;
  }
  // JSON.parse builds plain objects, so jose's isObject is: an object, not null, not an array.
  if (json === null || typeof json !== 'object' || Array.isArray(json)) return undefined;
  return { claims: json as Claims, strict: segment.length % 4 !== 1 && utf8 };
}

/** The payload segment of a compact JWS. */
const payloadOf = (token: string) => {
  const start = token.indexOf('.') + 1;
  return token.slice(start, token.indexOf('.', start));
};

/**
 * The claims of a JWT-shaped token, decoded once for both the routing by `iss` and the checks
 * after the signature; undefined when the payload is no JSON object.
 */
export function decodeClaims(token: string): DecodedClaims | undefined {
  return decodeSegment(payloadOf(token));
}

/**
 * The protected header of a compact JWS, undefined when `token` is none or its header is no JSON
 * object, read as jose's decodeProtectedHeader reads it (strict base64url and UTF-8).
 */
export function readProtectedHeader(token: string): Header | undefined {
  if (!looksLikeJwt(token)) return undefined;
  const decoded = decodeSegment(token.slice(0, token.indexOf('.')));
  return decoded?.strict ? decoded.claims : undefined;
}

/**
 * jose's header rules, in its order: `crit` (checkCrit); `alg` a non-empty string in the
 * allowlist. Returns the `alg`; throws jose's own errors, and checkCrit's VerifyError.
 */
export function checkProtectedHeader(header: Header, allowed: ReadonlyMap<string, unknown>) {
  const { alg } = header;
  checkCrit(header);
  if (typeof alg !== 'string' || alg.length === 0)
    throw new errors.JWSInvalid('JWS "alg" (Algorithm) Header Parameter missing or invalid');
  if (!allowed.has(alg))
    throw new errors.JOSEAlgNotAllowed('"alg" (Algorithm) Header Parameter value not allowed');
  return alg;
}

/**
 * jose's `crit` rules (RFC 7515 §4.1.11): when present, a non-empty list of extensions it
 * understands (only `b64`), each present in the header; `b64` a boolean and never false (RFC 7797
 * forbids it in a JWT). An extension it does not understand is a `crit_unsupported` VerifyError;
 * a malformed `crit` or `b64`, jose's own error.
 */
export function checkCrit(header: Header): void {
  const { crit } = header;
  if (crit !== undefined) {
    if (
      !Array.isArray(crit) ||
      crit.length === 0 ||
      crit.some((name) => typeof name !== 'string' || name.length === 0)
    )
      throw new errors.JWSInvalid(
        '"crit" (Critical) Header Parameter MUST be an array of non-empty strings when present',
      );
    for (const name of crit as string[]) {
      if (name !== 'b64')
        throw new VerifyError(
          'crit_unsupported',
          '"crit" names an extension that is not understood',
        );
      if (header.b64 === undefined)
        throw new errors.JWSInvalid(`Extension Header Parameter "${name}" is missing`);
    }
    if (typeof header.b64 !== 'boolean')
      throw new errors.JWSInvalid(
        'The "b64" (base64url-encode payload) Header Parameter must be a boolean',
      );
    if (!header.b64) throw new errors.JWTInvalid('JWTs MUST NOT use unencoded payload');
  }
}

/** What the claims are held to: jwtVerify's options of the same names. */
export interface ClaimRules {
  readonly issuer?: string | undefined;
  /** The `aud` required: this value, or (a list) any one of them. */
  readonly audience?: string | readonly string[] | undefined;
  /** Seconds, at least 0. */
  readonly clockTolerance?: number | undefined;
  readonly requiredClaims?: readonly string[] | undefined;
  /** Seconds an `iat` may lie in the past (jose's `maxTokenAge`); `iat` is then required. */
  readonly maxTokenAge?: number | undefined;
  /** The `typ` header required (`application/` optional, any case), as jose compares it. */
  readonly typ?: string | undefined;
}

/** jose's `typ` comparison: case-insensitive, `application/` implied when there is no `/`. */
const normalizeTyp = (value: string) => {
  const normalized = value.toLowerCase();
  return value.includes('/') ? normalized : `application/${normalized}`;
};

const failed = (claims: Claims, claim: string, message: string, reason = 'check_failed') =>
  new errors.JWTClaimValidationFailed(message, claims, claim, reason);

/** The claims `rules` require present, in jose's order, worked out once per rules object. */
const presenceOrders = new WeakMap<ClaimRules, readonly string[]>();

function presenceOrder(rules: ClaimRules): readonly string[] {
  let order = presenceOrders.get(rules);
  if (order === undefined) {
    const { issuer, audience, requiredClaims = [] } = rules;
    // jose checks presence in this order: `iss`, `aud`, then the required claims from the last.
    order = [
      ...(issuer === undefined ? [] : ['iss']),
      ...(audience === undefined ? [] : ['aud']),
      ...[...requiredClaims].reverse(),
    ];
    presenceOrders.set(rules, order);
  }
  return order;
}

/** A NumericDate claim: undefined when absent, else a number (jose's `"x" claim must be a number`). */
function numericDate(claims: Claims, claim: string): number | undefined {
  const value = claims[claim];
  if (value === undefined) return undefined;
  if (typeof value !== 'number')
    throw failed(claims, claim, `"${claim}" claim must be a number`, 'invalid');
  return value;
}

/**
 * jose's validateClaimsSet over claims already decoded (`decoded.strict` false is jose's
 * JWTInvalid), in its order and with its errors: `typ`; the required claims present (`iss` and
 * `aud` when asked for, then `requiredClaims`); `iss` exact; `aud` containing the audience; `iat`
 * and `nbf` numbers; `nbf` not after now + tolerance; `exp` after now − tolerance. `now` is
 * floored to whole seconds, as jose floors its `currentDate`. Only once the signature held (RFC
 * 8725 §3.1).
 */
export function checkClaims(
  decoded: DecodedClaims,
  header: Header,
  rules: ClaimRules,
  now: EpochSeconds,
): Claims {
  const { claims } = decoded;
  if (!decoded.strict)
    throw new errors.JWTInvalid('JWT Claims Set must be a top-level JSON object');
  const { typ, issuer, audience } = rules;
  // The same spelling needs no normalising (two lower-cased copies per token otherwise).
  if (
    typ !== undefined &&
    header.typ !== typ &&
    (typeof header.typ !== 'string' || normalizeTyp(header.typ) !== normalizeTyp(typ))
  )
    throw failed(claims, 'typ', 'unexpected "typ" JWT header value');
  const present = presenceOrder(rules);
  // An index loop: a `for…of` left an iterator result per claim, per token.
  for (let i = 0; i < present.length; i++) {
    const claim = present[i]!;
    if (!Object.hasOwn(claims, claim))
      throw failed(claims, claim, `missing required "${claim}" claim`, 'missing');
  }
  if (issuer !== undefined && claims.iss !== issuer)
    throw failed(claims, 'iss', 'unexpected "iss" claim value');
  if (audience !== undefined && !hasAudience(claims.aud, audience))
    throw failed(claims, 'aud', 'unexpected "aud" claim value');
  const tolerance = rules.clockTolerance ?? 0;
  const at = Math.floor(now);
  const iat = numericDate(claims, 'iat');
  if (rules.maxTokenAge !== undefined) {
    if (iat === undefined) throw failed(claims, 'iat', 'missing required "iat" claim', 'missing');
    if (at - iat - tolerance > rules.maxTokenAge)
      throw new errors.JWTExpired(
        '"iat" claim timestamp check failed (too far in the past)',
        claims,
        'iat',
        'check_failed',
      );
  }
  const nbf = numericDate(claims, 'nbf');
  if (nbf !== undefined && nbf > at + tolerance)
    throw failed(claims, 'nbf', '"nbf" claim timestamp check failed');
  const exp = numericDate(claims, 'exp');
  if (exp !== undefined && exp <= at - tolerance)
    throw new errors.JWTExpired(
      '"exp" claim timestamp check failed',
      claims,
      'exp',
      'check_failed',
    );
  return claims;
}

/** jose's audience presence: the string itself, or an array holding it. */
const hasAudience = (aud: unknown, audience: string | readonly string[]): boolean =>
  typeof audience !== 'string'
    ? audience.some((one) => hasAudience(aud, one))
    : typeof aud === 'string'
      ? aud === audience
      : Array.isArray(aud) && aud.includes(audience);

/** The claims of `token` decoded and checked by `rules` at `now` (checkClaims). */
export function validateClaims(
  token: string,
  header: Header,
  rules: ClaimRules,
  now: EpochSeconds,
) {
  const decoded = decodeClaims(token);
  if (decoded === undefined)
    throw new errors.JWTInvalid('JWT Claims Set must be a top-level JSON object');
  return checkClaims(decoded, header, rules, now);
}
