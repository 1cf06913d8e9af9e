// The fuzz targets' invariants, on this machine (Jazzer.js itself runs only in its image, the
// container lane test/containers/fuzz.test.ts): what counts as a finding and what does not.
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { readCorpus } from '../../fuzz/corpus.js';
import { createTargets, HTU, NOW, PROOF_ACCESS_TOKEN } from '../../fuzz/targets.js';
import { signProof } from '../../verifier/src/testing/dpop-proof.js';
import {
  AUDIENCE,
  ISSUER,
  mintToken,
  PRIVATE_JWKS,
  publicJwk,
} from '../../verifier/src/testing/fixtures.js';
import { signedByEmbeddedPublicKey, signedByOneOf } from './accepted-signature.js';
import {
  createFuzzTarget,
  DECISION_BUDGET_MS,
  FUZZ_TARGETS,
  FuzzFinding,
  parserOf,
} from './fuzz-target.js';
import { signAgain } from './sign-again.js';

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
const trusted = [publicJwk('rsaA'), publicJwk('ec')];

describe('the signature check behind "never accepts what no trusted key signed"', () => {
  it('holds for a token a trusted key signed, RSA or EC', async () => {
    expect(await signedByOneOf(await mintToken({ now: NOW }), trusted)).toBe(true);
    expect(await signedByOneOf(await mintToken({ key: 'ec', now: NOW }), trusted)).toBe(true);
  });

  it('fails for an unsigned token, another key, a changed payload or junk', async () => {
    const valid = await mintToken({ now: NOW });
    const [header, , signature] = valid.split('.');
    const unsigned = `${b64({ alg: 'none' })}.${b64({ iss: 'https://idp.test' })}.`;
    expect(await signedByOneOf(unsigned, trusted)).toBe(false);
    expect(await signedByOneOf(await mintToken({ key: 'attacker', now: NOW }), trusted)).toBe(
      false,
    );
    expect(await signedByOneOf(`${header}.${b64({ sub: 'admin' })}.${signature}`, trusted)).toBe(
      false,
    );
    expect(await signedByOneOf('a.b.c', trusted)).toBe(false);
  });

  it('holds for a DPoP proof signed by the key in its header, and only that key', async () => {
    const proof = { htu: HTU, iat: NOW, accessToken: PROOF_ACCESS_TOKEN };
    expect(await signedByEmbeddedPublicKey(await signProof(proof))).toBe(true);
    const otherKey = await signProof({ ...proof, header: { jwk: publicJwk('ecB') } });
    expect(await signedByEmbeddedPublicKey(otherKey)).toBe(false);
    // A proof that carries its private key proves nothing (RFC 9449 §4.2).
    const privateKey = await signProof({ ...proof, header: { jwk: PRIVATE_JWKS.ec } });
    expect(await signedByEmbeddedPublicKey(privateKey)).toBe(false);
  });
});

describe('a fuzz target', () => {
  const input = Buffer.from('a.b.c');

  it('passes a refusal and a signed acceptance', async () => {
    await expect(createFuzzTarget('jws', () => async () => 'refused:x')(input)).resolves.toBe(
      undefined,
    );
    const token = Buffer.from(await mintToken({ now: NOW }));
    await expect(createFuzzTarget('jws', () => async () => 'accepted')(token)).resolves.toBe(
      undefined,
    );
  });

  it('reports an error other than the parser refusal, with its stack', async () => {
    const fuzz = createFuzzTarget('event', (onCrash) => async () => {
      onCrash(new RangeError('index out of range'));
      return 'crash:RangeError';
    });
    const finding = fuzz(input);
    await expect(finding).rejects.toBeInstanceOf(FuzzFinding);
    await expect(finding).rejects.toThrow(
      /event parser threw .*RangeError: index out of range\n\s+at /s,
    );
  });

  it('reports an acceptance of an input no trusted key signed', async () => {
    const fuzz = createFuzzTarget('dpop', () => async () => 'accepted');
    await expect(fuzz(input)).rejects.toThrow(
      'the dpop parser accepted an input no trusted key signed',
    );
  });

  it('reports a decision slower than its budget', async () => {
    const fuzz = createFuzzTarget('jws', () => async () => {
      await sleep(DECISION_BUDGET_MS + 100);
      return 'refused:x';
    });
    await expect(fuzz(input)).rejects.toThrow(
      /the jws parser took \d+ ms \(budget 2000 ms\) for 5 characters/,
    );
  });

  it.each(FUZZ_TARGETS)(
    'passes every committed corpus input its %s runs start from',
    async (name) => {
      const fuzz = createFuzzTarget(name);
      for (const { input: seed } of readCorpus(parserOf(name))) await fuzz(Buffer.from(seed));
    },
  );
});

describe('a signed target', () => {
  const accept = () => async () => 'accepted' as const;
  const tokenWith = (claims: Record<string, unknown>) =>
    Buffer.from(`${b64({ alg: 'RS256', typ: 'at+jwt' })}.${b64(claims)}.`);

  it('signs the header and payload again, ES256 where the header asks for it, and the parser accepts them', async () => {
    const targets = createTargets();
    const tampered = (await mintToken({ key: 'ec', now: NOW })).replace(/\.[^.]+$/, '.AAAA');
    expect(await targets.jws(tampered)).toMatch(/^refused:/);
    expect(await targets.jws(signAgain(tampered))).toBe('accepted');
    expect(await targets.jws(signAgain(await mintToken({ now: NOW })))).toBe('accepted');
  });

  it('passes an accepted token for our issuer and audience, not yet expired', async () => {
    const claims = { iss: ISSUER, aud: [AUDIENCE], exp: NOW + 60 };
    await expect(createFuzzTarget('jws-signed', accept)(tokenWith(claims))).resolves.toBe(
      undefined,
    );
  });

  it.each([
    ['another issuer', { iss: 'https://evil.test', aud: AUDIENCE, exp: NOW + 60 }],
    ['another audience', { iss: ISSUER, aud: 'other-api', exp: NOW + 60 }],
    ['an expired token', { iss: ISSUER, aud: AUDIENCE, exp: NOW - 3600 }],
    ['no exp', { iss: ISSUER, aud: AUDIENCE }],
  ])('reports an accepted access token with %s', async (_, claims) => {
    await expect(createFuzzTarget('jws-signed', accept)(tokenWith(claims))).rejects.toThrow(
      'the jws-signed parser accepted claims not for this issuer and audience, or expired',
    );
  });
});
