// Compact JWS signing with node:crypto, the key parsed once per key-file version: the protected
// header is encoded once, and a mint is one JSON encode, one base64url and one sign. HS256 for
// the vendor kinds (Meilisearch, Stream, LiveKit verify HMAC); ES256 / RS256 / EdDSA for gate
// keys whose public half is published as a JWKS (RFC 7517), with an RFC 7638 thumbprint `kid`.

import {
  constants,
  createHash,
  createHmac,
  createPrivateKey,
  createPublicKey,
  sign,
  type JsonWebKey,
  type KeyObject,
} from 'node:crypto';

export type JwsAlg = 'HS256' | 'ES256' | 'RS256' | 'PS256' | 'EdDSA';

/** A public key as a JWKS lists it. */
export interface PublicJwk extends JsonWebKey {
  kid: string;
  alg: string;
  use: 'sig';
}

export interface JwsKey {
  readonly alg: JwsAlg;
  /** The base64url protected header (`alg`, `typ`, `kid` when set). */
  readonly header: string;
  /** The private key (asymmetric algorithms only), for callers that sign elsewhere. */
  readonly privateKey?: KeyObject;
  readonly publicJwk?: PublicJwk;
  sign(signingInput: string): string;
}

/** An HS256 key over a shared secret (the vendor kinds use the secret's text as bytes). */
export function hmacKey(secret: string, kid?: string): JwsKey {
  return {
    alg: 'HS256',
    header: encodeHeader({ alg: 'HS256', typ: 'JWT', kid }),
    sign: (input) => createHmac('sha256', secret).update(input).digest('base64url'),
  };
}

/** Parses a private key file (PEM or JWK) for an asymmetric algorithm; TypeError names `field`. */
export function asymmetricKey(
  bytes: Buffer,
  alg: Exclude<JwsAlg, 'HS256'>,
  field: string,
  kid?: string,
): JwsKey {
  const privateKey = parsePrivateKey(bytes, field);
  checkKeyFits(privateKey, alg, field);
  const publicJwk = createPublicKey(privateKey).export({ format: 'jwk' });
  const keyId = kid ?? thumbprint(publicJwk);
  const digest = alg === 'EdDSA' ? null : 'sha256';
  const options =
    alg === 'ES256'
      ? { key: privateKey, dsaEncoding: 'ieee-p1363' as const }
      : alg === 'PS256'
        ? { key: privateKey, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 }
        : privateKey;
  return {
    alg,
    header: encodeHeader({ alg, typ: 'JWT', kid: keyId }),
    privateKey,
    publicJwk: { ...publicJwk, kid: keyId, alg, use: 'sig' },
    sign: (input) => sign(digest, Buffer.from(input), options).toString('base64url'),
  };
}

/** A compact JWS of `payload` (JSON key order kept, so known answers can match byte for byte). */
export function signJwt(key: JwsKey, payload: object): string {
  const input = `${key.header}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}`;
  return `${input}.${key.sign(input)}`;
}

function encodeHeader(header: Record<string, string | undefined>): string {
  return Buffer.from(JSON.stringify(header)).toString('base64url');
}

function parsePrivateKey(bytes: Buffer, field: string): KeyObject {
  const text = bytes.toString('utf8').trim();
  if (/-----BEGIN (?:RSA )?PUBLIC KEY-----/.test(text)) {
    throw new TypeError(`"${field}" holds a public key; signing needs the private key`);
  }
  try {
    if (text.startsWith('{')) {
      const jwk = JSON.parse(text) as JsonWebKey;
      if (typeof jwk.d !== 'string') throw new TypeError('not private');
      return createPrivateKey({ key: jwk, format: 'jwk' });
    }
    return createPrivateKey({ key: text, format: 'pem' });
  } catch {
    // The parser's message can quote the input; ours names only the field.
    throw new TypeError(`"${field}" is not a readable private key (PEM or a private JWK)`);
  }
}

function checkKeyFits(key: KeyObject, alg: JwsAlg, field: string): void {
  const type = key.asymmetricKeyType;
  const details = key.asymmetricKeyDetails ?? {};
  const fits =
    alg === 'ES256'
      ? type === 'ec' && details.namedCurve === 'prime256v1'
      : alg === 'EdDSA'
        ? type === 'ed25519'
        : (type === 'rsa' || type === 'rsa-pss') && (details.modulusLength ?? 0) >= 2048;
  if (!fits) {
    const want =
      alg === 'ES256'
        ? 'an EC P-256'
        : alg === 'EdDSA'
          ? 'an Ed25519'
          : 'an RSA (2048 bits or more)';
    throw new TypeError(`"${field}" must hold ${want} private key for "${alg}"`);
  }
}

/** RFC 7638: SHA-256 over the required members in lexicographic order. */
function thumbprint(jwk: JsonWebKey): string {
  const members =
    jwk.kty === 'EC'
      ? { crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y }
      : jwk.kty === 'RSA'
        ? { e: jwk.e, kty: jwk.kty, n: jwk.n }
        : { crv: jwk.crv, kty: jwk.kty, x: jwk.x };
  return createHash('sha256').update(JSON.stringify(members)).digest('base64url');
}
