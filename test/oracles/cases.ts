// Generated requests for the differential oracles: an access token (RFC 9068) and, for DPoP, a
// proof (RFC 9449), each valid or mutated in one or a few places (alg, typ, kid, claims, time,
// signature bytes, segments, encoding), as data first (a Case, readable when printed) and then
// built into the headers a client sends.
import { constants, createHash, createHmac, createPrivateKey, createPublicKey } from 'node:crypto';
import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import fc from 'fast-check';
import type { JWK } from 'jose';
import { PRIVATE_JWKS } from '../../verifier/src/testing/fixtures.js';

export const ISSUER = 'https://idp.test';
export const AUDIENCE = 'secret-gate-api';
export const ORIGIN = 'https://gate.test';
export const PATH = '/secret';
/** The frozen "now" of every oracle, in epoch seconds. */
export const NOW = Date.UTC(2026, 0, 15, 12, 0, 0) / 1000;
export const TOLERANCE = 30;
/** RFC 9449 gives no window; oauth4webapi's is fixed at 300 s, the gate's is configured to it. */
export const IAT_WINDOW = 300;
export const ALGORITHMS = ['RS256', 'PS256', 'ES256', 'ES384', 'EdDSA'] as const;

type Alg = (typeof ALGORITHMS)[number];
interface Signer {
  readonly alg: Alg;
  readonly key: KeyObject;
  readonly kid: string;
  readonly publicJwk: JWK;
}

const fromJwk = (name: keyof typeof PRIVATE_JWKS) =>
  createPrivateKey({ key: PRIVATE_JWKS[name] as never, format: 'jwk' });
const publicOf = (key: KeyObject) => createPublicKey(key).export({ format: 'jwk' }) as JWK;
const signer = (alg: Alg, key: KeyObject, kid: string): Signer => ({
  alg,
  key,
  kid,
  publicJwk: publicOf(key),
});

// The issuer's keys, one per algorithm (made once per run where keys.json has none), and an
// attacker's RSA key under a kid the issuer does not publish.
const ISSUER_SIGNERS: Record<Alg, Signer> = {
  RS256: signer('RS256', fromJwk('rsaA'), 'rsaA-2026'),
  PS256: signer('PS256', fromJwk('rsaB'), 'rsaB-ps'),
  ES256: signer('ES256', fromJwk('ec'), 'ec-2026'),
  ES384: signer('ES384', generateKeyPairSync('ec', { namedCurve: 'P-384' }).privateKey, 'ec-384'),
  EdDSA: signer('EdDSA', generateKeyPairSync('ed25519').privateKey, 'ed-1'),
};
const ATTACKER = signer('RS256', fromJwk('attacker'), 'attacker-1');

/** The issuer's JWKS as it publishes it: `alg`, `kid` and `use` on every key. */
export const JWKS: { keys: JWK[] } = {
  keys: Object.values(ISSUER_SIGNERS).map((s) => ({
    ...s.publicJwk,
    kid: s.kid,
    alg: s.alg,
    use: 'sig',
  })),
};

// The clients' DPoP keys (RSA: e = 65537 and 2048 bits, the only RSA keys the gate takes).
const CLIENT_SIGNERS: Record<'ES256' | 'ES384' | 'EdDSA' | 'PS256', Signer> = {
  ES256: signer('ES256', fromJwk('ecB'), ''),
  ES384: signer('ES384', generateKeyPairSync('ec', { namedCurve: 'P-384' }).privateKey, ''),
  EdDSA: signer('EdDSA', generateKeyPairSync('ed25519').privateKey, ''),
  PS256: signer('PS256', generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey, ''),
};

/** The issuer's RSA key as PEM text: the classic "HS256 with the public key" secret. */
const RSA_PEM = createPublicKey(ISSUER_SIGNERS.RS256.key).export({ format: 'pem', type: 'spki' });

// ---------------------------------------------------------------------------------------------
// The case, as data.

/** Mostly `ok`, sometimes one of `others`: a few mutations per case, many valid cases. */
const mostly = <T>(ok: T, others: fc.Arbitrary<T>) =>
  fc.oneof({ weight: 30, arbitrary: fc.constant(ok) }, { weight: 1, arbitrary: others });
const some = <T>(...values: T[]) => fc.constantFrom(...values);

const SEGMENT_MUTATIONS = [
  'flipSignatureBit',
  'nonCanonicalSignature',
  'truncateSignature',
  'extendSignature',
  'emptySignature',
  'padSignature',
  'padHeader',
  'standardAlphabet',
  'twoSegments',
  'fourSegments',
  'swapHeaderPayload',
  'innerSpace',
] as const;
type SegmentMutation = (typeof SEGMENT_MUTATIONS)[number] | 'none';

const segments = fc.record({
  mutation: mostly<SegmentMutation>('none', some(...SEGMENT_MUTATIONS)),
  /** Which byte or bit a mutation touches. */
  at: fc.nat(4095),
});

const offset = (ok: number | undefined, min: number, max: number) =>
  mostly<number | 'string' | undefined>(
    ok,
    fc.oneof(fc.integer({ min, max }), some<number | 'string' | undefined>('string', undefined)),
  );

const accessToken = fc.record({
  signer: mostly<Alg | 'attacker'>('ES256', some<Alg | 'attacker'>(...ALGORITHMS, 'attacker')),
  /** The `alg` header: the signer's, or another (alg confusion, HS256 with the public key, none). */
  alg: mostly<'same' | Alg | 'HS256' | 'none' | 'RS512'>(
    'same',
    some<'same' | Alg | 'HS256' | 'none' | 'RS512'>(...ALGORITHMS, 'HS256', 'none', 'RS512'),
  ),
  kid: mostly('same', some('missing', 'unknown', 'otherKey', 'number')),
  typ: mostly<string | undefined>(
    'at+jwt',
    some<string | undefined>(
      'application/at+jwt',
      'AT+JWT',
      'JWT',
      'dpop+jwt',
      'at+JWT',
      undefined,
    ),
  ),
  crit: mostly<string[] | undefined>(undefined, some<string[] | undefined>(['exp'], [], ['b64'])),
  extraHeader: mostly('none', some('jku', 'x5u', 'jwk')),
  iss: mostly<string | number | undefined>(
    ISSUER,
    some<string | number | undefined>(`${ISSUER}/`, 'https://evil.test', undefined, 1),
  ),
  aud: mostly<unknown>(
    AUDIENCE,
    some<unknown>([AUDIENCE, 'other'], ['other'], 'other', undefined, 7, [], null),
  ),
  exp: offset(300, -120, 120).chain((v) =>
    fc.oneof({ weight: 30, arbitrary: fc.constant(v) }, fc.constant(<const>'farFuture')),
  ),
  nbf: offset(undefined, -60, 60),
  iat: offset(0, -90, 90),
  sub: mostly<unknown>('user-1', some<unknown>(undefined, 42, '')),
  jti: mostly<unknown>('at-1', some<unknown>(undefined, 42, '')),
  clientId: mostly('client_id', some('azp', 'missing', 'number')),
  scope: mostly<unknown>('openid secrets:read', some<unknown>(undefined, ['secrets:read'], 3)),
  refusedClaim: mostly('none', some('nonce', 'events')),
  cnf: mostly('auto', some('none', 'proofKey', 'otherKey', 'empty', 'x5t', 'extra', 'string')),
  scheme: mostly('auto', some('Bearer', 'DPoP', 'bearer', 'dpop', 'Basic')),
  segments,
});

const proof = fc.record({
  key: mostly<keyof typeof CLIENT_SIGNERS>('ES256', some('ES384', 'EdDSA', 'PS256')),
  alg: mostly<'same' | Alg | 'HS256' | 'none'>(
    'same',
    some<'same' | Alg | 'HS256' | 'none'>(...ALGORITHMS, 'HS256', 'none'),
  ),
  typ: mostly<string | undefined>(
    'dpop+jwt',
    some<string | undefined>('application/dpop+jwt', 'DPoP+JWT', 'JWT', 'at+jwt', undefined),
  ),
  jwk: mostly('public', some('missing', 'private', 'otherKey', 'issuerKey', 'string')),
  crit: mostly<string[] | undefined>(undefined, some<string[] | undefined>(['htm'], [])),
  htm: mostly('same', some('POST', 'get', undefined)),
  htu: mostly(
    'same',
    some(
      'query',
      'fragment',
      'otherPath',
      'otherHost',
      'trailingSlash',
      'missing',
      'http',
      'defaultPort',
      'userinfo',
    ),
  ),
  iat: offset(0, -330, 330),
  exp: offset(undefined, -45, 45),
  nbf: offset(undefined, -45, 45),
  ath: mostly('same', some('missing', 'other', 'ofAnotherToken')),
  jti: mostly('unique', some('missing', 'empty', 'long', 'number')),
  segments,
});

/** A proof with nothing mutated. */
const VALID_PROOF = {
  key: 'ES256',
  alg: 'same',
  typ: 'dpop+jwt',
  jwk: 'public',
  crit: undefined,
  htm: 'same',
  htu: 'same',
  iat: 0,
  exp: undefined,
  nbf: undefined,
  ath: 'same',
  jti: 'unique',
  segments: { mutation: 'none', at: 0 },
} as const;

export const caseArbitrary = fc.record({
  method: some('GET', 'POST'),
  token: accessToken,
  proof: fc.option(proof, { freq: 2 }),
  /** A DPoP header sent although the client uses none (or a second one). */
  dpopHeaderWithoutProof: mostly(false, fc.constant(true)),
});
export type CaseSpec = typeof caseArbitrary extends fc.Arbitrary<infer T> ? T : never;

// ---------------------------------------------------------------------------------------------
// Built: what a client sends.

export interface Request {
  readonly method: string;
  readonly authorization: string;
  readonly dpop: string | undefined;
}

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

function signJws(alg: string, key: KeyObject, input: string): string {
  const data = Buffer.from(input);
  let signature: Buffer;
  if (alg === 'none') return '';
  if (alg === 'HS256') signature = createHmac('sha256', RSA_PEM).update(data).digest();
  else if (key.asymmetricKeyType === 'ed25519') signature = sign(null, data, key);
  else if (key.asymmetricKeyType === 'ec')
    signature = sign(
      key.asymmetricKeyDetails?.namedCurve === 'secp384r1' ? 'sha384' : 'sha256',
      data,
      {
        key,
        dsaEncoding: 'ieee-p1363',
      },
    );
  else if (alg.startsWith('PS'))
    signature = sign('sha256', data, {
      key,
      padding: constants.RSA_PKCS1_PSS_PADDING,
      saltLength: 32,
    });
  else signature = sign(alg === 'RS512' ? 'sha512' : 'sha256', data, key);
  return signature.toString('base64url');
}

/** A non-canonical last character: same bits for the signature, other unused low bits. */
function nonCanonical(segment: string, at: number): string {
  const bits = (segment.length * 6) % 8; // unused low bits of the last character
  if (bits === 0 || segment.length === 0) return segment;
  const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  const value = ALPHABET.indexOf(segment.at(-1)!);
  const low = 1 + (at % ((1 << bits) - 1));
  return segment.slice(0, -1) + ALPHABET[(value & ~((1 << bits) - 1)) | low];
}

function mutateSegments(jws: string, { mutation, at }: CaseSpec['token']['segments']): string {
  const [header, payload, signature] = jws.split('.') as [string, string, string];
  switch (mutation) {
    case 'none':
      return jws;
    case 'flipSignatureBit': {
      const bytes = Buffer.from(signature, 'base64url');
      if (bytes.length === 0) return `${header}.${payload}.AA`;
      bytes[at % bytes.length]! ^= 1 << (at % 8);
      return `${header}.${payload}.${bytes.toString('base64url')}`;
    }
    case 'nonCanonicalSignature':
      return `${header}.${payload}.${nonCanonical(signature, at)}`;
    case 'truncateSignature':
      return `${header}.${payload}.${signature.slice(0, -1 - (at % 3))}`;
    case 'extendSignature':
      return `${header}.${payload}.${signature}${'AQ'.slice(0, 1 + (at % 2))}`;
    case 'emptySignature':
      return `${header}.${payload}.`;
    case 'padSignature':
      return `${header}.${payload}.${signature}${'='.repeat((4 - (signature.length % 4)) % 4 || 4)}`;
    case 'padHeader':
      return `${header}${'='.repeat((4 - (header.length % 4)) % 4 || 4)}.${payload}.${signature}`;
    case 'standardAlphabet': {
      const swapped = jws.replace(/-/g, '+').replace(/_/g, '/');
      return swapped === jws ? `${header}.${payload}.${signature}+` : swapped;
    }
    case 'twoSegments':
      return `${header}.${payload}`;
    case 'fourSegments':
      return `${jws}.${signature}`;
    case 'swapHeaderPayload':
      return `${payload}.${header}.${signature}`;
    case 'innerSpace':
      return `${header}.${payload} .${signature}`;
  }
}

const timeClaim = (value: number | 'string' | undefined, base = NOW) =>
  value === undefined ? undefined : value === 'string' ? String(base) : base + value;

const withoutUndefined = (object: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(object).filter(([, value]) => value !== undefined));

export interface Built {
  readonly request: Request;
  /** The token alone, and the bound key's thumbprint input, for the oracles' own rules. */
  readonly token: string;
}

let serial = 0;

/** The request a client sends for `spec`; `thumbprint` is RFC 7638's of a JWK (async in jose). */
export function buildCase(spec: CaseSpec, thumbprints: ReadonlyMap<string, string>): Built {
  const t = spec.token;
  const p = spec.proof;
  const tokenSigner = t.signer === 'attacker' ? ATTACKER : ISSUER_SIGNERS[t.signer];
  const alg = t.alg === 'same' ? tokenSigner.alg : t.alg;
  const kid = {
    same: tokenSigner.kid,
    missing: undefined,
    unknown: 'kid-nobody-has',
    otherKey: tokenSigner.kid === 'ec-2026' ? 'rsaA-2026' : 'ec-2026',
    number: 1,
  }[t.kid];
  const clientSigner = CLIENT_SIGNERS[p?.key ?? 'ES256'];
  const proofKeyThumbprint = thumbprints.get(clientSigner.alg)!;
  const cnf = {
    auto: p === null ? undefined : { jkt: proofKeyThumbprint },
    none: undefined,
    proofKey: { jkt: proofKeyThumbprint },
    otherKey: { jkt: thumbprints.get(clientSigner.alg === 'ES256' ? 'EdDSA' : 'ES256') },
    empty: {},
    x5t: { 'x5t#S256': proofKeyThumbprint },
    extra: { jkt: proofKeyThumbprint, kid: 'k' },
    string: proofKeyThumbprint,
  }[t.cnf];
  const header = withoutUndefined({
    alg,
    kid,
    typ: t.typ,
    crit: t.crit,
    ...(t.crit?.includes('b64') ? { b64: true } : {}),
    ...(t.extraHeader === 'jku' ? { jku: 'https://evil.test/jwks' } : {}),
    ...(t.extraHeader === 'x5u' ? { x5u: 'https://evil.test/cert' } : {}),
    ...(t.extraHeader === 'jwk' ? { jwk: ATTACKER.publicJwk } : {}),
  });
  const clientClaim =
    t.clientId === 'missing'
      ? {}
      : t.clientId === 'azp'
        ? { azp: 'spa-demo' }
        : { client_id: t.clientId === 'number' ? 5 : 'spa-demo' };
  const claims = withoutUndefined({
    iss: t.iss,
    aud: t.aud,
    sub: t.sub,
    jti: t.jti,
    scope: t.scope,
    ...clientClaim,
    exp: t.exp === 'farFuture' ? NOW + 10 * 365 * 86_400 : timeClaim(t.exp),
    nbf: timeClaim(t.nbf),
    iat: timeClaim(t.iat),
    cnf,
    ...(t.refusedClaim === 'none'
      ? {}
      : { [t.refusedClaim]: t.refusedClaim === 'events' ? {} : 'n-1' }),
  });
  const input = `${b64(header)}.${b64(claims)}`;
  const token = mutateSegments(`${input}.${signJws(alg, tokenSigner.key, input)}`, t.segments);

  const dpopScheme = p !== null;
  const scheme = t.scheme === 'auto' ? (dpopScheme ? 'DPoP' : 'Bearer') : t.scheme;
  const authorization = `${scheme} ${token}`;
  let dpop: string | undefined;
  if (p !== null) dpop = buildProof(p, clientSigner, spec.method, token);
  else if (spec.dpopHeaderWithoutProof)
    dpop = buildProof(VALID_PROOF, CLIENT_SIGNERS.ES256, spec.method, token);
  return { request: { method: spec.method, authorization, dpop }, token };
}

function buildProof(
  p: NonNullable<CaseSpec['proof']>,
  client: Signer,
  method: string,
  token: string,
): string {
  const alg = p.alg === 'same' ? client.alg : p.alg;
  const jwk = {
    public: client.publicJwk,
    missing: undefined,
    private: client.key.export({ format: 'jwk' }),
    otherKey: CLIENT_SIGNERS[client.alg === 'ES256' ? 'EdDSA' : 'ES256'].publicJwk,
    issuerKey: ISSUER_SIGNERS.ES256.publicJwk,
    string: 'jwk',
  }[p.jwk];
  const header = withoutUndefined({ alg, typ: p.typ, jwk, crit: p.crit });
  const htu = {
    same: `${ORIGIN}${PATH}`,
    query: `${ORIGIN}${PATH}?a=1`,
    fragment: `${ORIGIN}${PATH}#f`,
    otherPath: `${ORIGIN}/other`,
    otherHost: `https://evil.test${PATH}`,
    trailingSlash: `${ORIGIN}${PATH}/`,
    missing: undefined,
    http: `http://gate.test${PATH}`,
    defaultPort: `https://gate.test:443${PATH}`,
    userinfo: `https://u:p@gate.test${PATH}`,
  }[p.htu];
  const ath = {
    same: Buffer.from(sha256(token)).toString('base64url'),
    missing: undefined,
    other: 'x'.repeat(43),
    ofAnotherToken: Buffer.from(sha256(`${token}x`)).toString('base64url'),
  }[p.ath];
  serial += 1;
  const jti = {
    unique: `p-${serial}`,
    missing: undefined,
    empty: '',
    long: `p-${serial}-${'j'.repeat(300)}`,
    number: serial,
  }[p.jti];
  const claims = withoutUndefined({
    jti,
    htm: p.htm === 'same' ? method : p.htm,
    htu,
    iat: timeClaim(p.iat),
    exp: timeClaim(p.exp),
    nbf: timeClaim(p.nbf),
    ath,
  });
  const input = `${b64(header)}.${b64(claims)}`;
  return mutateSegments(`${input}.${signJws(alg, client.key, input)}`, p.segments);
}

const sha256 = (text: string) => createHash('sha256').update(text).digest();

/** The client keys' RFC 7638 thumbprints, by algorithm (computed once by the caller with jose). */
export const CLIENT_PUBLIC_JWKS = Object.fromEntries(
  Object.entries(CLIENT_SIGNERS).map(([alg, s]) => [alg, s.publicJwk]),
) as Record<keyof typeof CLIENT_SIGNERS, JWK>;
