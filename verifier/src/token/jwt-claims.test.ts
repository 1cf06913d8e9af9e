import { errors } from 'jose';
import { describe, expect, it } from 'vitest';
import { VerifyError } from '../errors.js';
import {
  checkProtectedHeader,
  decodeClaims,
  readProtectedHeader,
  validateClaims,
} from './jwt-claims.js';

const allowed = new Map([['RS256', true]]);
const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
const NOW = Date.UTC(2026, 0, 1, 12);
const T = NOW / 1000;
const options = {
  issuer: 'https://idp.test',
  audience: 'secret-gate-api',
  clockTolerance: 30,
  requiredClaims: ['exp'],
};
const claims = {
  iss: 'https://idp.test',
  aud: 'secret-gate-api',
  sub: 'user-1',
  iat: T,
  exp: T + 300,
};
/** A token whose signature segment is irrelevant here: validateClaims runs after the signature. */
const token = (payload: unknown, header: Record<string, unknown> = { alg: 'RS256' }) =>
  `${b64(header)}.${b64(payload)}.c2ln`;

describe('the protected header, checked as jose checks it', () => {
  it.each([
    ['no crit', { alg: 'RS256' }],
    ['crit b64 with b64 true', { alg: 'RS256', crit: ['b64'], b64: true }],
    ['b64 false without crit (ignored, RFC 7797)', { alg: 'RS256', b64: false }],
  ])('accepts %s', (_name, header) => {
    expect(checkProtectedHeader(header, allowed)).toBe('RS256');
  });

  it.each([
    [
      'an unknown crit extension (crit_unsupported)',
      { alg: 'RS256', crit: ['urn:x'], 'urn:x': 1 },
      VerifyError,
      '"crit" names an extension that is not understood',
    ],
    [
      'crit that is not a list',
      { alg: 'RS256', crit: 'b64', b64: true },
      errors.JWSInvalid,
      'MUST be an array',
    ],
    ['an empty crit list', { alg: 'RS256', crit: [] }, errors.JWSInvalid, 'MUST be an array'],
    [
      'crit naming a parameter the header lacks',
      { alg: 'RS256', crit: ['b64'] },
      errors.JWSInvalid,
      'Extension Header Parameter "b64" is missing',
    ],
    [
      'a non-boolean b64',
      { alg: 'RS256', crit: ['b64'], b64: 'no' },
      errors.JWSInvalid,
      'must be a boolean',
    ],
    [
      'an unencoded payload (b64 false)',
      { alg: 'RS256', crit: ['b64'], b64: false },
      errors.JWTInvalid,
      'unencoded payload',
    ],
    ['a missing alg', {}, errors.JWSInvalid, '"alg" (Algorithm) Header Parameter missing'],
    ['alg none', { alg: 'none' }, errors.JOSEAlgNotAllowed, 'not allowed'],
    ['an HMAC alg', { alg: 'HS256' }, errors.JOSEAlgNotAllowed, 'not allowed'],
  ])('refuses %s', (_name, header, ErrorClass, message) => {
    expect(() => checkProtectedHeader(header as Record<string, unknown>, allowed)).toThrow(
      ErrorClass,
    );
    expect(() => checkProtectedHeader(header as Record<string, unknown>, allowed)).toThrow(message);
  });
});

describe('the claims of a verified token, validated by jose', () => {
  it('returns the claims when iss, aud and the time window hold', () => {
    expect(validateClaims(token(claims), { alg: 'RS256' }, options, T)).toEqual(claims);
  });

  it.each([
    ['an expired token', { ...claims, exp: T - 31 }, errors.JWTExpired],
    ['a token without exp', { ...claims, exp: undefined }, errors.JWTClaimValidationFailed],
    ['a token not yet valid', { ...claims, nbf: T + 31 }, errors.JWTClaimValidationFailed],
    ['another issuer', { ...claims, iss: 'https://evil.test' }, errors.JWTClaimValidationFailed],
    ['another audience', { ...claims, aud: ['spa-demo'] }, errors.JWTClaimValidationFailed],
    ['a payload that is not an object', ['iss'], errors.JWTInvalid],
  ])('refuses %s', (_name, payload, ErrorClass) => {
    expect(() => validateClaims(token(payload), { alg: 'RS256' }, options, T)).toThrow(ErrorClass);
  });

  it.each([
    ['at+jwt', true],
    ['application/AT+JWT', true],
    ['JWT', false],
    [undefined, false],
    [7, false],
  ])("with typ required, the token's own typ %s passes: %s", (typ, passes) => {
    const header = { alg: 'RS256', typ };
    const run = () =>
      validateClaims(token(claims, header), header, { ...options, typ: 'at+jwt' }, T);
    if (passes) expect(run()).toEqual(claims);
    else expect(run).toThrow('unexpected "typ" JWT header value');
  });
});

describe('each segment decoded once, and read as strictly as jose reads it', () => {
  const raw = (bytes: Buffer) => bytes.toString('base64url');
  const json = Buffer.from(JSON.stringify(claims));

  it('routes and checks one decoded object: the claims as sent, strict when jose reads them too', () => {
    expect(decodeClaims(token(claims))).toEqual({ claims, strict: true });
  });

  /** Claims whose JSON is a multiple of 3 bytes: their base64url has no partial group. */
  const whole = (extra: string) => {
    for (let pad = ''; ; pad += 'x') {
      const bytes = Buffer.from(JSON.stringify({ ...claims, jti: `${extra}${pad}` }));
      if (bytes.length % 3 === 0) return bytes;
    }
  };
  const notUtf8 = whole('?');
  notUtf8[notUtf8.indexOf('?')] = 0xff;

  it.each([
    ['bytes that are not UTF-8', raw(notUtf8)],
    ['a character left over (length mod 4 = 1)', `${raw(whole(''))}A`],
  ])('refuses %s after the signature, as jose does, though Node reads them', (_name, payload) => {
    const jws = `${b64({ alg: 'RS256' })}.${payload}.c2ln`;
    expect(decodeClaims(jws)).toMatchObject({ claims: { iss: claims.iss }, strict: false });
    expect(() => validateClaims(jws, { alg: 'RS256' }, options, T)).toThrow(errors.JWTInvalid);
  });

  it('reads a U+FFFD the issuer wrote (valid UTF-8) as strictly as jose, and a payload of 20,000 bytes alike', () => {
    const replacement = { ...claims, name: 'caf\ufffd' };
    expect(decodeClaims(token(replacement))).toEqual({ claims: replacement, strict: true });
    const large = { ...claims, jti: 'x'.repeat(20_000) };
    expect(decodeClaims(token(large))).toEqual({ claims: large, strict: true });
    // The segment decoded after a large one is read from its own bytes only.
    expect(decodeClaims(token(claims))).toEqual({ claims, strict: true });
  });

  it("drops a leading byte order mark, as jose's TextDecoder does", () => {
    const bom = raw(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), json]));
    const jws = `${b64({ alg: 'RS256' })}.${bom}.c2ln`;
    expect(validateClaims(jws, { alg: 'RS256' }, options, T)).toEqual(claims);
  });

  it('reads no header that is not a JSON object or not UTF-8', () => {
    expect(readProtectedHeader(`${b64(['RS256'])}.${b64(claims)}.c2ln`)).toBeUndefined();
    expect(
      readProtectedHeader(`${raw(Buffer.from([0x7b, 0xff, 0x7d]))}.${b64(claims)}.c2ln`),
    ).toBeUndefined();
    expect(readProtectedHeader(`${b64({ alg: 'RS256' })}.${b64(claims)}.c2ln`)).toEqual({
      alg: 'RS256',
    });
  });
});
