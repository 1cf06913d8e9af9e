// jose's jwtVerify checks around a signature checked by jws-signature.ts: the protected header
// before any key is fetched, the claims after the signature held.
import { decodeProtectedHeader, errors, UnsecuredJWT } from 'jose';
import { VerifyError } from '../errors.js';
import { createInterner } from '../intern.js';
import { looksLikeJwt } from './token-shape.js';

type Header = Readonly<Record<string, unknown>>;

/** The protected header of a compact JWS, undefined when `token` is none or its header no object. */
export function readProtectedHeader(token: string) {
  if (!looksLikeJwt(token)) return undefined;
  try {
    return decodeProtectedHeader(token);
  } catch {
    return undefined;
  }
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

/** Issuers send one or two `typ` values: each envelope header is encoded once. */
const envelopeHeader = createInterner<string>(64);

/**
 * The claims of `token` validated by jose with jwtVerify's claim `options`: UnsecuredJWT.decode is
 * exactly that validation (typ, required claims, iss, aud, exp, nbf, iat) behind an `alg: none`
 * envelope built from the token's payload and `typ`. Only once the signature held (RFC 8725 §3.1).
 */
export function validateClaims(
  token: string,
  header: Header,
  options: Parameters<typeof UnsecuredJWT.decode>[1],
) {
  const { typ } = header;
  const encode = () => Buffer.from(JSON.stringify({ alg: 'none', typ })).toString('base64url');
  const envelope = typeof typ === 'string' ? envelopeHeader(typ, encode) : encode();
  const start = token.indexOf('.') + 1;
  const payload = token.slice(start, token.indexOf('.', start));
  return UnsecuredJWT.decode(`${envelope}.${payload}.`, options).payload;
}
