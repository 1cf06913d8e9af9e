// Reads a CloudFront private key once and imports it with WebCrypto.
// node:crypto parses every container CloudFront users meet (PKCS#8 PEM, the console's PKCS#1
// "RSA PRIVATE KEY" PEM, SEC1 "EC PRIVATE KEY", JWK); WebCrypto only takes PKCS#8 or JWK, so the key
// is re-exported once as PKCS#8 DER for `crypto.subtle.importKey` and that buffer is wiped after.

import { createPrivateKey, KeyObject, webcrypto, type JsonWebKey } from 'node:crypto';

export type CloudFrontAlgorithm = 'RSA-SHA1' | 'RSA-SHA256' | 'ECDSA-SHA256';
export const cloudFrontAlgorithms: readonly CloudFrontAlgorithm[] = [
  'RSA-SHA1',
  'RSA-SHA256',
  'ECDSA-SHA256',
];

/** A PEM string or buffer, a JWK (object or JSON text), or an already parsed KeyObject. */
export type PrivateKeyInput = string | Uint8Array | JsonWebKey | KeyObject;

/** The key imported once: the WebCrypto key and a KeyObject view of that same key. */
export interface SigningKey {
  readonly algorithm: CloudFrontAlgorithm;
  readonly cryptoKey: webcrypto.CryptoKey;
  readonly keyObject: KeyObject;
}

/** Is the value one of the three algorithms CloudFront verifies? */
export function isCloudFrontAlgorithm(value: unknown): value is CloudFrontAlgorithm {
  return typeof value === 'string' && (cloudFrontAlgorithms as readonly string[]).includes(value);
}

/**
 * Parses and checks a private key synchronously: it must be private, and of the size CloudFront
 * accepts for the algorithm (RSA 2048 bits, or ECDSA P-256). Throws a TypeError that never quotes
 * key material.
 */
export function readPrivateKey(input: PrivateKeyInput, algorithm: CloudFrontAlgorithm): KeyObject {
  const key = parse(input);
  if (key.type !== 'private')
    throw new TypeError('"privateKey" is a public key; CloudFront signing needs the private key');
  const details = key.asymmetricKeyDetails ?? {};
  if (algorithm === 'ECDSA-SHA256') {
    if (key.asymmetricKeyType !== 'ec' || details.namedCurve !== 'prime256v1') {
      throw new TypeError('"privateKey" must be an ECDSA P-256 key for algorithm "ECDSA-SHA256"');
    }
  } else if (key.asymmetricKeyType !== 'rsa' || details.modulusLength !== 2048) {
    throw new TypeError(
      `"privateKey" must be an RSA 2048-bit key for algorithm "${algorithm}" (CloudFront accepts no other size)`,
    );
  }
  return key;
}

/** Imports a checked key into WebCrypto, once, as a non-extractable signing key. */
export async function importSigningKey(
  input: PrivateKeyInput,
  algorithm: CloudFrontAlgorithm,
): Promise<SigningKey> {
  const pkcs8 = readPrivateKey(input, algorithm).export({ format: 'der', type: 'pkcs8' });
  try {
    const cryptoKey = await webcrypto.subtle.importKey(
      'pkcs8',
      pkcs8,
      importParameters(algorithm),
      false,
      ['sign'],
    );
    return Object.freeze({ algorithm, cryptoKey, keyObject: KeyObject.from(cryptoKey) });
  } finally {
    pkcs8.fill(0);
  }
}

function importParameters(
  algorithm: CloudFrontAlgorithm,
): webcrypto.RsaHashedImportParams | webcrypto.EcKeyImportParams {
  switch (algorithm) {
    case 'RSA-SHA1':
      return { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-1' };
    case 'RSA-SHA256':
      return { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' };
    case 'ECDSA-SHA256':
      return { name: 'ECDSA', namedCurve: 'P-256' };
  }
}

const publicPem = /-----BEGIN (?:RSA )?PUBLIC KEY-----/;

function parse(input: PrivateKeyInput): KeyObject {
  if (input instanceof KeyObject) return input;
  const text =
    typeof input === 'string'
      ? input
      : input instanceof Uint8Array
        ? Buffer.from(input).toString('latin1')
        : '';
  if (publicPem.test(text)) {
    throw new TypeError('"privateKey" is a public key; CloudFront signing needs the private key');
  }
  try {
    if (typeof input === 'string' && input.trimStart().startsWith('{')) {
      return createPrivateKey({ key: JSON.parse(input) as JsonWebKey, format: 'jwk' });
    }
    if (typeof input === 'string') return createPrivateKey({ key: input, format: 'pem' });
    if (input instanceof Uint8Array)
      return createPrivateKey({ key: Buffer.from(input), format: 'pem' });
    if (typeof input === 'object' && input !== null) {
      if (typeof input.d !== 'string') throw new TypeError('not private');
      return createPrivateKey({ key: input, format: 'jwk' });
    }
  } catch {
    // The parser's own message can quote parts of the input; ours names only the field.
  }
  throw new TypeError(
    '"privateKey" is not a readable private key (PEM PKCS#8, PEM PKCS#1/SEC1 or a private JWK; encrypted PEM is not supported)',
  );
}
