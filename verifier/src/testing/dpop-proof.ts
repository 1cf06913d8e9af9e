// DPoP proofs for tests, signed with the fixed keys of keys.json: a well-formed proof by default,
// and every malformed shape an attack test needs (another key in the header, private members,
// `alg: none`, HS256, missing claims, an RSA key chosen to be slow).
import {
  createHash,
  createPrivateKey,
  generateKeyPairSync,
  randomBytes,
  randomUUID,
  sign,
  type KeyObject,
} from 'node:crypto';
import { base64url, calculateJwkThumbprint, importJWK, SignJWT, type JWK } from 'jose';
import { PRIVATE_JWKS, type KeyName } from './fixtures.js';

export interface ProofOptions {
  /** The key that signs (default `ec`). */
  readonly key?: KeyName;
  readonly htm?: string;
  readonly htu: string;
  /** The access token for `ath`; omitted at a token endpoint. */
  readonly accessToken?: string;
  /** Seconds since the epoch for `iat` (default: now). */
  readonly iat?: number;
  /** Claims merged last; `undefined` removes one. */
  readonly claims?: Record<string, unknown>;
  /** Header merged last (e.g. another `jwk`, a private `jwk`, another `typ`). */
  readonly header?: Record<string, unknown>;
}

/** The public half of a fixed key, as a proof's `jwk` header carries it. */
export function proofJwk(name: KeyName): JWK {
  const { kty, crv, x, y, n, e } = PRIVATE_JWKS[name];
  return Object.fromEntries(
    Object.entries({ kty, crv, x, y, n, e }).filter(([, value]) => value !== undefined),
  );
}

/** RFC 7638 thumbprint of a fixed key: what a bound token's `cnf.jkt` holds. */
export function thumbprintOf(name: KeyName): Promise<string> {
  return calculateJwkThumbprint(proofJwk(name), 'sha256');
}

export function athOf(token: string): string {
  return createHash('sha256').update(token).digest('base64url');
}

function proofClaims(options: ProofOptions): Record<string, unknown> {
  const claims: Record<string, unknown> = {
    jti: randomUUID(),
    htm: options.htm ?? 'GET',
    htu: options.htu,
    iat: options.iat ?? Math.floor(Date.now() / 1000),
    ...(options.accessToken === undefined ? {} : { ath: athOf(options.accessToken) }),
    ...options.claims,
  };
  for (const [name, value] of Object.entries(claims)) if (value === undefined) delete claims[name];
  return claims;
}

/** A DPoP proof signed with a fixed key (its public key in the header unless overridden). */
export async function signProof(options: ProofOptions): Promise<string> {
  const name = options.key ?? 'ec';
  const jwk = PRIVATE_JWKS[name];
  return new SignJWT(proofClaims(options))
    .setProtectedHeader({ alg: jwk.alg, typ: 'dpop+jwt', jwk: proofJwk(name), ...options.header })
    .sign(await importJWK(jwk, jwk.alg));
}

/** An unsigned proof (`alg: none`). */
export function unsignedProof(options: ProofOptions): string {
  const header = { alg: 'none', typ: 'dpop+jwt', jwk: proofJwk('ec') };
  const encode = (value: unknown) => base64url.encode(JSON.stringify(value));
  return `${encode(header)}.${encode(proofClaims(options))}.`;
}

/** An HS256 proof whose header carries the symmetric key (`kty: oct`). */
export async function hmacProof(options: ProofOptions): Promise<string> {
  const secret = new TextEncoder().encode('a-shared-secret-that-is-32-bytes!');
  return new SignJWT(proofClaims(options))
    .setProtectedHeader({
      alg: 'HS256',
      typ: 'dpop+jwt',
      // A symmetric key in the header: jose's types forbid it, a hostile client does not.
      jwk: { kty: 'oct', k: base64url.encode(secret) } as never,
    })
    .sign(secret);
}

/** The whole private JWK of a fixed key: a proof header must never carry one. */
export function privateProofJwk(name: KeyName): JWK {
  const { kid: _kid, alg: _alg, ...jwk } = PRIVATE_JWKS[name];
  return jwk;
}

/** An RS256 proof signed with node:crypto by any RSA key, `jwk` (its public half) in the header. */
export function signRsaProof(privateKey: KeyObject, jwk: JWK, options: ProofOptions): string {
  const header = { alg: 'RS256', typ: 'dpop+jwt', jwk, ...options.header };
  const encode = (value: unknown) => base64url.encode(JSON.stringify(value));
  const input = `${encode(header)}.${encode(proofClaims(options))}`;
  return `${input}.${base64url.encode(sign('sha256', Buffer.from(input), privateKey))}`;
}

const toInteger = (text: string) => BigInt(`0x${Buffer.from(text, 'base64url').toString('hex')}`);
function toText(value: bigint): string {
  const hex = value.toString(16);
  return Buffer.from(hex.length % 2 === 0 ? hex : `0${hex}`, 'hex').toString('base64url');
}

/** `value`⁻¹ mod `modulus` (extended Euclid); `value` and `modulus` coprime. */
function inverse(value: bigint, modulus: bigint): bigint {
  let [r0, r1, s0, s1] = [value % modulus, modulus, 1n, 0n];
  while (r1 !== 0n) {
    const q = r0 / r1;
    [r0, r1, s0, s1] = [r1, r0 - q * r1, s1, s0 - q * s1];
  }
  return ((s0 % modulus) + modulus) % modulus;
}

/**
 * A sound RSA-2048 key pair whose public exponent is about as long as its modulus, so each
 * verification costs a full modular exponentiation (milliseconds, where 65537 costs microseconds):
 * the key a hostile client would put in a proof's `jwk`. `jwk` is the public half.
 */
export function hugeExponentRsaKey(): { privateKey: KeyObject; jwk: JWK } {
  const pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const { n, p, q, qi } = pair.privateKey.export({ format: 'jwk' }) as Required<JWK>;
  const [P, Q] = [toInteger(p), toInteger(q)];
  const phi = (P - 1n) * (Q - 1n);
  const gcd = (a: bigint, b: bigint): bigint => (b === 0n ? a : gcd(b, a % b));
  let e: bigint;
  do e = toInteger(randomBytes(255).toString('base64url')) | (1n << 2039n) | 1n;
  while (gcd(e, phi) !== 1n);
  const d = inverse(e, phi);
  const jwk = { kty: 'RSA', n, e: toText(e) };
  const dp = toText(d % (P - 1n));
  const dq = toText(d % (Q - 1n));
  const full = { ...jwk, d: toText(d), p, q, dp, dq, qi };
  return { privateKey: createPrivateKey({ key: full, format: 'jwk' }), jwk };
}
