// Google's Wycheproof signature vectors (test/fixtures/wycheproof, Apache-2.0) through the
// verifier's own signature path: the vector's public key published as a JWKS entry and matched and
// imported by jose's local set, as key-set.ts does; verificationKey() for the scheme of the JWS
// `alg`; verifySignature() on a compact JWS whose signature segment is the vector's signature in
// base64url. A vector's message is arbitrary bytes, not two base64url segments, so it stands as the
// signing input itself (verifySignature signs the text before the last dot, byte for byte).
import { readFileSync } from 'node:fs';
import { createLocalJWKSet, type JWK } from 'jose';
import { describe, expect, it } from 'vitest';
import {
  signatureSchemes,
  verificationKey,
  verifySignature,
} from '../../verifier/src/token/jws-signature.js';

interface Vector {
  readonly tcId: number;
  readonly comment: string;
  readonly flags: readonly string[];
  readonly msg: string;
  readonly sig: string;
  readonly result: 'valid' | 'invalid' | 'acceptable';
}
interface Group {
  readonly publicKeyJwk?: JWK;
  readonly keyJwk?: JWK;
  readonly tests: readonly Vector[];
}
interface VectorFile {
  readonly numberOfTests: number;
  readonly testGroups: readonly Group[];
}

/**
 * Each file with its JWS `alg` and the `acceptable` vectors' expected decision. Wycheproof marks
 * `acceptable` what a library may accept or refuse; the gate's answer is pinned here so a change of
 * OpenSSL's behaviour is noticed and read (docs/SECURITY.md, "Three oracles").
 */
const FILES = [
  {
    file: 'rsa_signature_2048_sha256_test.json',
    alg: 'RS256',
    // tcId 8 "MissingNull": a DigestInfo without the NULL parameters of the SHA-256
    // AlgorithmIdentifier. RFC 8017 §9.2 note 2 lets a verifier accept it; OpenSSL 3 (node:crypto)
    // refuses it, and so does the gate: no IdP signs that encoding.
    acceptable: new Map([[8, false]]),
  },
  { file: 'rsa_pss_2048_sha256_mgf1_32_test.json', alg: 'PS256', acceptable: new Map() },
  { file: 'ecdsa_secp256r1_webcrypto_test.json', alg: 'ES256', acceptable: new Map() },
  { file: 'ecdsa_secp384r1_webcrypto_test.json', alg: 'ES384', acceptable: new Map() },
  { file: 'ed25519_test.json', alg: 'EdDSA', acceptable: new Map() },
] as const;

const load = (name: string) =>
  JSON.parse(
    readFileSync(new URL(`../fixtures/wycheproof/${name}`, import.meta.url), 'utf8'),
  ) as VectorFile;

/** The verifier's decision for one vector under one group's key: true when accepted. */
async function decide(alg: string, jwk: JWK, vector: Vector): Promise<boolean> {
  const scheme = signatureSchemes([alg]).get(alg)!;
  let key;
  try {
    // Wycheproof's `kid: "none"` and any `alg` are replaced, as an IdP's JWKS would name the key.
    const keys = createLocalJWKSet({ keys: [{ ...jwk, kid: 'wycheproof', alg }] });
    key = verificationKey(await keys({ alg, kid: 'wycheproof' }), scheme);
  } catch {
    return false; // a key jose will not import verifies nothing
  }
  if (key === undefined) return false;
  const signingInput = Buffer.from(vector.msg, 'hex').toString('latin1');
  const token = `${signingInput}.${Buffer.from(vector.sig, 'hex').toString('base64url')}`;
  return verifySignature(token, scheme, key);
}

describe('Wycheproof vectors through the verifier’s signature check', () => {
  it.each(FILES)('$file ($alg): every valid accepted, every invalid refused', async (entry) => {
    const vectors = load(entry.file);
    const wrong: string[] = [];
    const counts = { valid: 0, invalid: 0, acceptable: 0 };
    for (const group of vectors.testGroups) {
      const jwk = group.publicKeyJwk ?? group.keyJwk;
      expect(jwk, 'every group publishes its key as a JWK').toBeDefined();
      for (const vector of group.tests) {
        counts[vector.result] += 1;
        const accepted = await decide(entry.alg, jwk!, vector);
        const expected =
          vector.result === 'acceptable'
            ? entry.acceptable.get(vector.tcId)
            : vector.result === 'valid';
        if (accepted !== expected)
          wrong.push(
            `tcId ${vector.tcId} (${vector.result}, ${vector.comment || vector.flags.join(',')}): ${accepted ? 'accepted' : 'refused'}`,
          );
      }
    }
    expect(wrong).toEqual([]);
    // No vector skipped, and the acceptable ones are exactly those documented above.
    expect(counts.valid + counts.invalid + counts.acceptable).toBe(vectors.numberOfTests);
    expect(counts.acceptable).toBe(entry.acceptable.size);
    expect(counts.valid).toBeGreaterThan(0);
    expect(counts.invalid).toBeGreaterThan(0);
  });

  it('refuses a valid vector whose signature bit is flipped or whose message changes', async () => {
    const [group] = load('ecdsa_secp256r1_webcrypto_test.json').testGroups;
    const valid = group!.tests.find((vector) => vector.result === 'valid')!;
    const jwk = group!.publicKeyJwk!;
    expect(await decide('ES256', jwk, valid)).toBe(true);
    const sig = Buffer.from(valid.sig, 'hex');
    sig[5]! ^= 1;
    expect(await decide('ES256', jwk, { ...valid, sig: sig.toString('hex') })).toBe(false);
    expect(await decide('ES256', jwk, { ...valid, msg: `${valid.msg}00` })).toBe(false);
    // The same key and signature under another `alg` of the allowlist: no scheme confusion.
    expect(await decide('ES384', jwk, valid)).toBe(false);
  });
});
