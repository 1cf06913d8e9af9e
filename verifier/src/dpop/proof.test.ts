import { describe, expect, it } from 'vitest';
import { VerifyError } from '../errors.js';
import {
  hugeExponentRsaKey,
  proofJwk,
  privateProofJwk,
  signProof,
  signRsaProof,
  hmacProof,
  unsignedProof,
  thumbprintOf,
} from '../testing/dpop-proof.js';
import { calculateJwkThumbprint, type JWK } from 'jose';
import { constants, createHash, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { createProofChecker, MAX_PROOF_BYTES } from './proof.js';

const NOW = 1_750_000_000;
const HTU = 'https://gate.example.com/secret';
const TOKEN = 'header.payload.signature';
const checkProof = createProofChecker({
  algorithms: ['ES256', 'RS256'],
  iatWindow: 60,
  now: () => NOW,
});
/** Every answer as a promise, as a caller that awaits sees it (a known header answers at once). */
const check = async (...args: Parameters<typeof checkProof>) => checkProof(...args);
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

  it('checks a proof under a header seen before at once, and refuses one there by throwing', async () => {
    const fresh = createProofChecker({ algorithms: ['ES256'], iatWindow: 60, now: () => NOW });
    const first = await signProof({ htu: HTU, accessToken: TOKEN, iat: NOW });
    // A new header waits for its key's thumbprint and import.
    const waited = fresh(first, expect200);
    expect(waited).toBeInstanceOf(Promise);
    await expect(waited).resolves.toMatchObject({ jkt: await thumbprintOf('ec') });
    const again = fresh(await signProof({ htu: HTU, accessToken: TOKEN, iat: NOW }), expect200);
    expect(again).not.toBeInstanceOf(Promise);
    expect(again).toMatchObject({ jkt: await thumbprintOf('ec'), iat: NOW });
    const late = await signProof({ htu: HTU, accessToken: TOKEN, iat: NOW - 61 });
    expect(() => fresh(late, expect200)).toThrow('"iat" claim is outside the accepted window');
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
      now: () => NOW,
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

  it('names the RFC 7638 thumbprint of an RSA proof key too', async () => {
    const proof = await signProof({ key: 'rsaA', htu: HTU, accessToken: TOKEN, iat: NOW });
    await expect(check(proof, expect200)).resolves.toMatchObject({
      jkt: await calculateJwkThumbprint(proofJwk('rsaA'), 'sha256'),
    });
  });

  it('refuses a proof whose alg does not fit its key (ES256 header, RSA key)', async () => {
    const proof = await signProof({ key: 'rsaA', htu: HTU, accessToken: TOKEN, iat: NOW });
    const [, payload, signature] = proof.split('.');
    const header = Buffer.from(
      JSON.stringify({ alg: 'ES256', typ: 'dpop+jwt', jwk: proofJwk('rsaA') }),
    ).toString('base64url');
    expect((await refusal(`${header}.${payload}.${signature}`)).code).toBe('dpop_proof_invalid');
  });

  it('refuses a proof whose "crit" names an extension jose does not understand', async () => {
    const proof = handSigned(
      { alg: 'ES256', typ: 'dpop+jwt', crit: ['urn:example:ext'], 'urn:example:ext': 1 },
      ec('P-256'),
    );
    expect(await refusal(proof)).toEqual({
      code: 'dpop_proof_invalid',
      message: 'the DPoP proof signature or claims did not verify',
    });
  });

  it('refuses a proof that carries an "exp" in the past, as jose validates it', async () => {
    const proof = await signProof({
      htu: HTU,
      accessToken: TOKEN,
      iat: NOW,
      claims: { exp: NOW - 10 },
    });
    expect((await refusal(proof)).code).toBe('dpop_proof_invalid');
  });

  it('refuses a proof whose signature is valid over other claims (the payload was swapped)', async () => {
    const honest = await signProof({ htu: HTU, accessToken: TOKEN, iat: NOW });
    const other = await signProof({ htu: HTU, accessToken: TOKEN, iat: NOW });
    const [header, , signature] = honest.split('.');
    expect((await refusal(`${header}.${other.split('.')[1]}.${signature}`)).message).toBe(
      'the DPoP proof signature or claims did not verify',
    );
  });

  it('accepts a proof signed by hand with node:crypto, as any client library would', async () => {
    await expect(
      check(handSigned({ alg: 'ES256', typ: 'dpop+jwt' }, ec('P-256')), expect200),
    ).resolves.toMatchObject({ jti: 'by-hand' });
  });

  it('refuses an ES256 proof signed with a P-384 key, even when the signature itself holds', async () => {
    expect((await refusal(handSigned({ alg: 'ES256', typ: 'dpop+jwt' }, ec('P-384')))).code).toBe(
      'dpop_proof_invalid',
    );
  });
});

type KeyPair = { privateKey: KeyObject; publicKey: KeyObject };
const ec = (namedCurve: string) => generateKeyPairSync('ec', { namedCurve });

/**
 * A proof signed by `pair` as `header.alg` asks (ECDSA raw r‖s, RSA-PSS with the hash length as
 * salt, Ed25519 unhashed), with `header` and the public key as its `jwk`.
 */
function handSigned(header: { alg: string } & Record<string, unknown>, pair: KeyPair): string {
  const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const claims = {
    jti: 'by-hand',
    htm: 'GET',
    htu: HTU,
    iat: NOW,
    ath: createHash('sha256').update(TOKEN).digest('base64url'),
  };
  const input = `${encode({ ...header, jwk: pair.publicKey.export({ format: 'jwk' }) })}.${encode(claims)}`;
  const digest = header.alg === 'EdDSA' ? null : `sha${header.alg.slice(2)}`;
  const signature = sign(digest, Buffer.from(input), {
    key: pair.privateKey,
    dsaEncoding: 'ieee-p1363',
    ...(header.alg.startsWith('PS')
      ? { padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 }
      : {}),
  });
  return `${input}.${signature.toString('base64url')}`;
}

describe('which proof keys may verify which "alg", each proof signed correctly by its key', () => {
  const anyAlg = createProofChecker({
    algorithms: ['ES256', 'ES384', 'RS256', 'PS256', 'EdDSA'],
    iatWindow: 60,
    now: () => NOW,
  });
  const rsa = (modulusLength: number) => generateKeyPairSync('rsa', { modulusLength });
  const rsa2048 = rsa(2048);
  it.each([
    ['ES256', 'a P-256 key', true, ec('P-256')],
    ['ES256', 'a P-384 key', false, ec('P-384')],
    ['ES384', 'a P-384 key', true, ec('P-384')],
    ['ES256', 'an RSA key', false, rsa2048],
    ['RS256', 'an RSA-2048 key', true, rsa2048],
    ['PS256', 'an RSA-2048 key', true, rsa2048],
    ['RS256', 'an RSA-1024 key', false, rsa(1024)],
    ['RS256', 'a P-256 key', false, ec('P-256')],
    ['EdDSA', 'an Ed25519 key', true, generateKeyPairSync('ed25519')],
    ['EdDSA', 'an Ed448 key', false, generateKeyPairSync('ed448')],
    ['EdDSA', 'a P-256 key', false, ec('P-256')],
  ])('%s with %s fits: %s', async (alg, _, fits, pair) => {
    const checked = anyAlg(handSigned({ alg, typ: 'dpop+jwt' }, pair), expect200);
    if (fits) await expect(checked).resolves.toMatchObject({ jti: 'by-hand' });
    else
      await expect(checked).rejects.toThrow('"jwk" header is not a public key usable with "alg"');
  });
});

describe('the proof key judged before any signature work', () => {
  const RSA_RULE =
    'an RSA key needs the exponent 65537 ("AQAB") and a modulus of 2048 to 4096 bits';
  const options = { htu: HTU, accessToken: TOKEN, iat: NOW };
  const bound = async (jwk: JWK) => ({ ...expect200, jkt: await calculateJwkThumbprint(jwk) });

  it("refuses an RSA key whose exponent is as long as its modulus, though it signed the proof and is the token's key", async () => {
    const { privateKey, jwk } = hugeExponentRsaKey();
    const proof = signRsaProof(privateKey, jwk, options);
    expect(await refusal(proof, await bound(jwk))).toEqual({
      code: 'dpop_proof_invalid',
      message: `"jwk" header is not a public key usable with "alg": ${RSA_RULE}`,
    });
  });

  it.each([
    [
      'the exponent 3',
      () => generateKeyPairSync('rsa', { modulusLength: 2048, publicExponent: 3 }),
    ],
    [
      'the exponent 2^32 - 1',
      () => generateKeyPairSync('rsa', { modulusLength: 2048, publicExponent: 2 ** 32 - 1 }),
    ],
    ['a 1024-bit modulus', () => generateKeyPairSync('rsa', { modulusLength: 1024 })],
  ])('refuses an RSA key with %s', async (_, pair) => {
    const { privateKey, publicKey } = pair();
    const jwk = publicKey.export({ format: 'jwk' }) as JWK;
    const { message } = await refusal(signRsaProof(privateKey, jwk, options), await bound(jwk));
    expect(message).toContain(RSA_RULE);
  });

  it.each([
    ['a modulus over 4096 bits', 513, 0x80],
    ['a modulus with a leading zero byte', 257, 0x00],
  ])('refuses %s by its text', async (_, length, first) => {
    const n = Buffer.alloc(length, 0xa5);
    n[0] = first;
    const jwk = { kty: 'RSA', n: n.toString('base64url'), e: 'AQAB' };
    const { message } = await refusal(
      signRsaProof(generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey, jwk, options),
      await bound(jwk),
    );
    expect(message).toContain(RSA_RULE);
  });

  it.each([
    ['an EC key on another curve', { kty: 'EC', crv: 'secp256k1', x: 'AA', y: 'AA' }],
    ['an OKP key under ES256', { kty: 'OKP', crv: 'Ed25519', x: 'AA' }],
    ['an RSA key under ES256', proofJwk('rsaA')],
  ])('refuses %s for ES256 by its members', async (_, jwk) => {
    const proof = signProof({ ...options, header: { jwk } });
    expect(await refusal(proof, await bound(jwk))).toEqual({
      code: 'dpop_proof_invalid',
      message: '"jwk" header is not a public key usable with "alg"',
    });
  });

  it('refuses a key other than the token\'s "cnf.jkt" before its signature is checked', async () => {
    const expectation = { ...expect200, jkt: await thumbprintOf('ec') };
    const byOtherKey = await signProof({ ...options, key: 'ecB' });
    const [header, payload] = byOtherKey.split('.');
    for (const proof of [byOtherKey, `${header}.${payload}.${'A'.repeat(86)}`])
      expect(await refusal(proof, expectation)).toEqual({
        code: 'dpop_binding_mismatch',
        message: 'the proof key is not the token\'s "cnf.jkt"',
      });
  });

  it('refuses a known proof header that comes with another token\'s "cnf.jkt"', async () => {
    const proof = await signProof(options);
    await expect(check(proof, await bound(proofJwk('ec')))).resolves.toMatchObject({
      jti: expect.any(String),
    });
    const again = await signProof(options);
    expect((await refusal(again, await bound(proofJwk('ecB')))).code).toBe('dpop_binding_mismatch');
  });
});
