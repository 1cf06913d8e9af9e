import { generateKeyPairSync, webcrypto } from 'node:crypto';
import {
  base64url,
  compactVerify,
  CompactSign,
  exportJWK,
  generateKeyPair,
  importJWK,
  type CryptoKey,
} from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { signatureSchemes, verificationKey, verifySignature } from './jws-signature.js';
import { MAX_TOKEN_BYTES } from './token-shape.js';

const encoder = new TextEncoder();

async function signed(alg: string, options: Record<string, unknown> = {}) {
  const pair = await generateKeyPair(alg, { extractable: true, ...options });
  const token = await new CompactSign(encoder.encode('{"sub":"user-1"}'))
    .setProtectedHeader({ alg })
    .sign(pair.privateKey);
  return {
    token,
    publicKey: pair.publicKey,
    privateKey: pair.privateKey,
  };
}

function check(token: string, alg: string, key: CryptoKey): boolean | 'unusable key' {
  const scheme = signatureSchemes([alg]).get(alg)!;
  const keyObject = verificationKey(key, scheme);
  return keyObject === undefined ? 'unusable key' : verifySignature(token, scheme, keyObject);
}

/** The same token with one character of its payload segment changed. */
function tampered(token: string): string {
  const [header, payload, signature] = token.split('.') as [string, string, string];
  const flipped = payload.startsWith('e') ? `f${payload.slice(1)}` : `e${payload.slice(1)}`;
  return `${header}.${flipped}.${signature}`;
}

describe('JWS signatures checked with node:crypto, as jose checks them with WebCrypto', () => {
  it.each([
    'RS256',
    'RS384',
    'RS512',
    'PS256',
    'PS384',
    'PS512',
    'ES256',
    'ES384',
    'ES512',
    'EdDSA',
  ])('accepts a %s signature made by jose and refuses it once the payload changes', async (alg) => {
    const { token, publicKey } = await signed(alg);
    expect(check(token, alg, publicKey)).toBe(true);
    expect(check(tampered(token), alg, publicKey)).toBe(false);
  });

  it('refuses a signature made by another key of the same kind', async () => {
    const { token } = await signed('ES256');
    const other = await signed('ES256');
    expect(check(token, 'ES256', other.publicKey)).toBe(false);
  });

  it('refuses an ECDSA signature in DER form (JWS uses raw r‖s) and a truncated one, without throwing', async () => {
    const { token, publicKey } = await signed('ES256');
    const [header, payload, signature] = token.split('.') as [string, string, string];
    const raw = base64url.decode(signature);
    const der = Buffer.concat([
      Buffer.from([0x30, raw.length + 4, 0x02, 32]),
      raw.subarray(0, 32),
      Buffer.from([0x02, 32]),
      raw.subarray(32),
    ]);
    expect(check(`${header}.${payload}.${base64url.encode(der)}`, 'ES256', publicKey)).toBe(false);
    expect(check(`${header}.${payload}.${signature.slice(0, 20)}`, 'ES256', publicKey)).toBe(false);
  });

  it('uses the hash length as the RSA-PSS salt length, as WebCrypto and RFC 7518 do', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const { sign, constants } = await import('node:crypto');
    const input = `${base64url.encode('{"alg":"PS256"}')}.${base64url.encode('{}')}`;
    const withSalt = (saltLength: number) =>
      `${input}.${base64url.encode(sign('sha256', Buffer.from(input), { key: privateKey, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength }))}`;
    const key = (await importJWK(await exportJWK(publicKey), 'PS256')) as CryptoKey;
    expect(check(withSalt(32), 'PS256', key)).toBe(true);
    expect(check(withSalt(20), 'PS256', key)).toBe(false);
  });

  it('never reads a PSS signature as RS256, even with an rsa-pss KeyObject (whose own padding is PSS)', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('rsa-pss', { modulusLength: 2048 });
    const { sign, constants } = await import('node:crypto');
    const input = `${base64url.encode('{"alg":"RS256"}')}.${base64url.encode('{}')}`;
    const pss = sign('sha256', Buffer.from(input), {
      key: privateKey,
      padding: constants.RSA_PKCS1_PSS_PADDING,
      saltLength: 32,
    });
    const token = `${input}.${base64url.encode(pss)}`;
    expect(verifySignature(token, signatureSchemes(['RS256']).get('RS256')!, publicKey)).toBe(
      false,
    );
    expect(verifySignature(token, signatureSchemes(['PS256']).get('PS256')!, publicKey)).toBe(true);
  });

  it.each([
    ['a key imported for RS256 used for PS256', 'RS256', {}, 'PS256'],
    ['a key imported for RS256 used for RS512', 'RS256', {}, 'RS512'],
    ['a P-384 key used for ES256', 'ES384', {}, 'ES256'],
  ])('refuses %s before any arithmetic', async (_name, keyAlg, options, tokenAlg) => {
    const { publicKey } = await signed(keyAlg, options);
    const { token } = await signed(tokenAlg);
    expect(check(token, tokenAlg, publicKey)).toBe('unusable key');
  });

  it('refuses an RSA key under 2048 bits before any arithmetic', async () => {
    const { publicKey } = generateKeyPairSync('rsa', { modulusLength: 1024 });
    const key = await webcrypto.subtle.importKey(
      'jwk',
      publicKey.export({ format: 'jwk' }),
      { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' },
      false,
      ['verify'],
    );
    const { token } = await signed('RS256');
    expect(check(token, 'RS256', key)).toBe('unusable key');
  });

  it('refuses a private key as a verification key', async () => {
    const { token, privateKey } = await signed('ES256');
    expect(check(token, 'ES256', privateKey)).toBe('unusable key');
  });

  it('checks a JWS longer than its reused buffer as one that fits, and the next one still fits', async () => {
    const pair = await generateKeyPair('RS256', { extractable: true });
    const sign = (sub: string) =>
      new CompactSign(encoder.encode(JSON.stringify({ sub })))
        .setProtectedHeader({ alg: 'RS256' })
        .sign(pair.privateKey);
    const long = await sign('x'.repeat(20_000));
    const short = await sign('user-1');
    expect(long.length).toBeGreaterThan(MAX_TOKEN_BYTES);
    expect(check(long, 'RS256', pair.publicKey)).toBe(true);
    expect(check(tampered(long), 'RS256', pair.publicKey)).toBe(false);
    expect(check(short, 'RS256', pair.publicKey)).toBe(true);
    expect(check(tampered(short), 'RS256', pair.publicKey)).toBe(false);
  });

  it.each(['none', 'HS256', 'RS1', ''])('has no scheme for "%s"', (alg) => {
    expect(() => signatureSchemes([alg])).toThrow(`no signature scheme for "${alg}"`);
  });
});

/**
 * The signature segment spelled otherwise, and the verdict it must get: jose's, or a refusal where
 * jose's decoder (atob) forgives padding and whitespace, which a compact JWS never holds (RFC 7515
 * §2, §7.1; the gate's token shape check refuses those before any key is fetched), and where it
 * ignores the unused low bits of the last character (one signature, one spelling).
 */
const SPELLINGS: ReadonlyArray<readonly [string, 'as jose' | 'refused', (sig: string) => string]> =
  [
    ['one character appended', 'as jose', (sig) => `${sig}A`],
    ['two characters appended', 'as jose', (sig) => `${sig}AA`],
    ['one character removed', 'as jose', (sig) => sig.slice(0, -1)],
    ['a "+" in place of a character', 'as jose', (sig) => `+${sig.slice(1)}`],
    ['a "/" in place of a character', 'as jose', (sig) => `/${sig.slice(1)}`],
    ['a "." in place of a character', 'as jose', (sig) => `.${sig.slice(1)}`],
    [
      'the last character with its unused low bits changed',
      'refused',
      (sig) => {
        const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
        return `${sig.slice(0, -1)}${alphabet[alphabet.indexOf(sig.at(-1)!) ^ 1]!}`;
      },
    ],
    ['"=" padding', 'refused', (sig) => `${sig}=`],
    ['"==" padding', 'refused', (sig) => `${sig}==`],
    ['a space appended', 'refused', (sig) => `${sig} `],
  ];

describe('the signature segment read strictly', () => {
  const KEYS = [
    ['RS256', 'RSA-2048', { modulusLength: 2048 }],
    ['RS256', 'RSA-3072', { modulusLength: 3072 }],
    ['PS384', 'RSA-4096', { modulusLength: 4096 }],
    ['ES256', 'P-256', {}],
    ['ES384', 'P-384', {}],
    ['ES512', 'P-521', {}],
    ['EdDSA', 'Ed25519', {}],
  ] as const;
  const tokens = new Map<string, Awaited<ReturnType<typeof signed>>>();
  beforeAll(async () => {
    for (const [alg, name, options] of KEYS) tokens.set(name, await signed(alg, options));
  }, 60_000);

  const rows = KEYS.flatMap(([alg, name]) =>
    SPELLINGS.map(
      ([spelling, verdict, respell]) => [alg, name, spelling, verdict, respell] as const,
    ),
  );
  it.each(rows)('%s, %s key, %s: %s', async (alg, name, _spelling, verdict, respell) => {
    const { token, publicKey } = tokens.get(name)!;
    const dot = token.lastIndexOf('.');
    const respelled = `${token.slice(0, dot + 1)}${respell(token.slice(dot + 1))}`;
    const jose = await compactVerify(respelled, publicKey, { algorithms: [alg] }).then(
      () => true,
      () => false,
    );
    expect(check(respelled, alg, publicKey)).toBe(verdict === 'as jose' ? jose : false);
  });

  it("refuses a character appended to a P-384, P-521 and RSA-3072 signature (Node's decoder drops it)", () => {
    for (const [alg, name] of [
      ['ES384', 'P-384'],
      ['ES512', 'P-521'],
      ['RS256', 'RSA-3072'],
    ] as const) {
      const { token, publicKey } = tokens.get(name)!;
      expect(check(token, alg, publicKey)).toBe(true);
      expect(check(`${token}A`, alg, publicKey)).toBe(false);
    }
  });
});
