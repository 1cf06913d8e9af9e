// The fuzz targets' invariants, on this machine (Jazzer.js itself runs only in its image, the
// container lane test/containers/fuzz.test.ts): what counts as a finding and what does not.
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { readCorpus } from '../../fuzz/corpus.js';
import { HTU, NOW, PROOF_ACCESS_TOKEN, TARGET_NAMES } from '../../fuzz/targets.js';
import { signProof } from '../../verifier/src/testing/dpop-proof.js';
import { mintToken, PRIVATE_JWKS, publicJwk } from '../../verifier/src/testing/fixtures.js';
import { signedByEmbeddedPublicKey, signedByOneOf } from './accepted-signature.js';
import { createFuzzTarget, DECISION_BUDGET_MS, FuzzFinding } from './fuzz-target.js';

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

  it.each(TARGET_NAMES)(
    'passes every committed %s corpus input (the seeds of its runs)',
    async (name) => {
      const fuzz = createFuzzTarget(name);
      for (const { input: seed } of readCorpus(name)) await fuzz(Buffer.from(seed));
    },
  );
});
