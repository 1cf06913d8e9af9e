// Signs a fuzzed header and payload with a trusted test key, so the checks behind the signature
// (header members, claims, events, DPoP-free token rules) see mutated input too: a mutation of a
// signed token otherwise stops at the signature check.
import { createPrivateKey, sign, type KeyObject } from 'node:crypto';
import { PRIVATE_JWKS, type KeyName } from '../../verifier/src/testing/fixtures.js';

const keyObject = (name: KeyName): KeyObject =>
  createPrivateKey({ key: PRIVATE_JWKS[name] as never, format: 'jwk' });
const RSA = keyObject('rsaA');
const EC = keyObject('ec');

/** The `alg` a header names, when it is readable; the signature follows it where it can. */
function algOf(header: string): unknown {
  try {
    return (JSON.parse(Buffer.from(header, 'base64url').toString('utf8')) as { alg?: unknown }).alg;
  } catch {
    return undefined;
  }
}

/**
 * `input`'s first two segments (its header and payload, as spelled) and a signature over them:
 * ES256 by the `ec` key when the header asks for ES256, else RS256 by `rsaA` (which a header
 * naming another `alg` then fails on, as a real token would).
 */
export function signAgain(input: string): string {
  const first = input.indexOf('.');
  const second = first < 0 ? -1 : input.indexOf('.', first + 1);
  const signingInput = second < 0 ? input : input.slice(0, second);
  const data = Buffer.from(signingInput);
  const signature =
    algOf(signingInput.slice(0, Math.max(first, 0))) === 'ES256'
      ? sign('sha256', data, { key: EC, dsaEncoding: 'ieee-p1363' })
      : sign('sha256', data, RSA);
  return `${signingInput}.${signature.toString('base64url')}`;
}
