import { describe, expect, it } from 'vitest';
import { VerifyError } from '../errors.js';
import {
  proofJwk,
  privateProofJwk,
  signProof,
  hmacProof,
  unsignedProof,
  thumbprintOf,
} from '../testing/dpop-proof.js';
import { calculateJwkThumbprint } from 'jose';
import { createProofChecker, jwkThumbprint, MAX_PROOF_BYTES } from './proof.js';

const NOW = 1_750_000_000;
const HTU = 'https://gate.example.com/secret';
const TOKEN = 'header.payload.signature';
const check = createProofChecker({
  algorithms: ['ES256', 'RS256'],
  iatWindow: 60,
  now: () => NOW * 1000,
});
const expect200 = { htm: 'GET', htu: HTU, accessToken: TOKEN };

async function refusal(proof: string | Promise<string>, expectation = expect200) {
  try {
    await check(await proof, expectation);
  } catch (error) {
    expect(error).toBeInstanceOf(VerifyError);
    return { code: (error as VerifyError).code, message: (error as VerifyError).message };
  }
  throw new Error('the proof was accepted');
}

describe('DPoP proof check (RFC 9449 §4.3)', () => {
  it('accepts a proof for this method, URL and token, and names its key thumbprint', async () => {
    const proof = await signProof({ htu: HTU, accessToken: TOKEN, iat: NOW });
    const checked = await check(proof, expect200);
    expect(checked.jkt).toBe(await thumbprintOf('ec'));
    expect(checked.iat).toBe(NOW);
  });

  it('ignores the query and the letter case of scheme and host in "htu"', async () => {
    const proof = await signProof({
      htu: 'HTTPS://Gate.Example.com:443/secret?a=1',
      accessToken: TOKEN,
      iat: NOW,
    });
    await expect(check(proof, expect200)).resolves.toMatchObject({ iat: NOW });
  });

  it.each([
    ['another method', { htm: 'POST' }, '"htm" claim does not match the request method'],
    ['another URL', { htu: 'https://gate.example.com/other' }, '"htu" claim does not match'],
    ['another host', { htu: 'https://evil.example/secret' }, '"htu" claim does not match'],
    ['an old iat', { iat: NOW - 61 }, '"iat" claim is outside the accepted window'],
    ['a future iat', { iat: NOW + 61 }, '"iat" claim is outside the accepted window'],
    ['no jti', { claims: { jti: undefined } }, '"jti" claim is missing'],
    ['no ath', { claims: { ath: undefined } }, '"ath" claim is missing'],
    [
      'the ath of another token',
      { accessToken: 'another.token.value' },
      '"ath" claim does not match',
    ],
  ])('refuses a proof with %s', async (_, options, message) => {
    const proof = signProof({ htu: HTU, accessToken: TOKEN, iat: NOW, ...options });
    const { code, message: text } = await refusal(proof);
    expect(code).toBe('dpop_proof_invalid');
    expect(text).toContain(message);
  });

  it.each([
    ['typ other than dpop+jwt', { typ: 'JWT' }, '"typ" header must be "dpop+jwt"'],
    ['no jwk', { jwk: undefined }, '"jwk" header must hold the public key'],
    ['a jwk with private members', { jwk: privateProofJwk('ec') }, 'private key members'],
    ['a header key that did not sign', { jwk: proofJwk('ecB') }, 'did not verify'],
  ])('refuses a proof with %s', async (_, header, message) => {
    const proof = signProof({ htu: HTU, accessToken: TOKEN, iat: NOW, header });
    const { code, message: text } = await refusal(proof);
    expect(code).toBe('dpop_proof_invalid');
    expect(text).toContain(message);
  });

  it('refuses alg none and HS256 before any crypto', async () => {
    const options = { htu: HTU, accessToken: TOKEN, iat: NOW };
    expect((await refusal(unsignedProof(options))).message).toContain('not a compact JWS');
    expect((await refusal(hmacProof(options))).message).toContain('"alg" is not an allowed');
  });

  it('refuses an algorithm outside the allowlist even when asymmetric', async () => {
    const esOnly = createProofChecker({
      algorithms: ['ES256'],
      iatWindow: 60,
      now: () => NOW * 1000,
    });
    const proof = await signProof({ key: 'rsaA', htu: HTU, accessToken: TOKEN, iat: NOW });
    await expect(esOnly(proof, expect200)).rejects.toThrow('"alg" is not an allowed');
  });

  it('refuses an oversized or garbage proof unparsed', async () => {
    expect((await refusal(`a.${'b'.repeat(MAX_PROOF_BYTES)}.c`)).message).toContain('larger than');
    expect((await refusal('not-a-proof')).message).toContain('not a compact JWS');
    expect((await refusal('e30.e30.e30, e30.e30.e30')).message).toContain('not a compact JWS');
  });

  it('needs no ath at a token endpoint', async () => {
    const proof = await signProof({ htm: 'POST', htu: 'https://idp.example/token', iat: NOW });
    await expect(
      check(proof, { htm: 'POST', htu: 'https://idp.example/token' }),
    ).resolves.toMatchObject({ jkt: await thumbprintOf('ec') });
  });

  it('computes RFC 7638 thumbprints exactly as jose does, for EC and RSA keys', async () => {
    for (const name of ['ec', 'rsaA'] as const)
      expect(jwkThumbprint(proofJwk(name))?.thumbprint).toBe(
        await calculateJwkThumbprint(proofJwk(name), 'sha256'),
      );
    expect(jwkThumbprint({ kty: 'oct', k: 'c2VjcmV0' })).toBeUndefined();
  });

  it('refuses a proof whose alg does not fit its key (ES256 header, RSA key)', async () => {
    const proof = await signProof({ key: 'rsaA', htu: HTU, accessToken: TOKEN, iat: NOW });
    const [, payload, signature] = proof.split('.');
    const header = Buffer.from(
      JSON.stringify({ alg: 'ES256', typ: 'dpop+jwt', jwk: proofJwk('rsaA') }),
    ).toString('base64url');
    expect((await refusal(`${header}.${payload}.${signature}`)).code).toBe('dpop_proof_invalid');
  });
});
