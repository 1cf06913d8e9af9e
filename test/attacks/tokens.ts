// The attack-token table: every hostile bearer token the gate must refuse, built at test time from
// the issuer's real published keys (and, where a real signature matters, from the dev IdP), so a
// refusal proves the check it names and not merely "the signature did not match".
import {
  createHmac,
  createPublicKey,
  generateKeyPairSync,
  sign,
  type KeyObject,
} from 'node:crypto';
import type { JWK } from 'jose';

/** What the client sees for one row: refused (no secret) or accepted (the secret set). */
export type Outcome = 'refused' | 'accepted';

export interface AttackCase {
  /** Behaviour-sentence name, unique in the table. */
  readonly name: string;
  /** The whole `Authorization` header value to send. */
  readonly authorization: string;
  readonly outcome: Outcome;
  /** Statuses NGINX may answer with for this row (401 unless the row says why not). */
  readonly statuses: readonly number[];
}

/** Changes the dev IdP applies to a token it signs with its real key; `null` removes a member. */
export interface TokenChange {
  readonly claims?: Readonly<Record<string, unknown>>;
  readonly header?: Readonly<Record<string, unknown>>;
}

export interface AttackKit {
  /** The issuer exactly as the verifier is configured with it. */
  readonly issuer: string;
  readonly audience: string;
  /** The issuer's published key set, fetched over HTTP like the verifier does. */
  readonly jwks: { readonly keys: readonly JWK[] };
  /** A valid access token for the `secret` policy. */
  readonly valid: string;
  /** Signs a token with the issuer's real key after applying `change`. */
  readonly mint: (change: TokenChange) => Promise<string>;
  /** A URL serving an attacker-controlled JWKS, to prove `jku`/`x5u` are never followed. */
  readonly attackerJwksUrl: string;
  /** Whether the verifier requires RFC 9068 `typ: at+jwt` (its default). */
  readonly strictTyp: boolean;
}

/** A key the attacker owns, published at `attackerJwksUrl` under `kid`. */
export interface AttackerKey {
  readonly kid: string;
  readonly privateKey: KeyObject;
  readonly jwk: JWK;
}

/** Creates the attacker's RSA key once per suite (RSA generation is the slow part). */
export function createAttackerKey(kid = 'attacker-key'): AttackerKey {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = { ...(publicKey.export({ format: 'jwk' }) as JWK), kid, alg: 'RS256', use: 'sig' };
  return { kid, privateKey, jwk };
}

const b64u = (value: string | Uint8Array): string => Buffer.from(value).toString('base64url');
const json = (value: unknown): string => b64u(JSON.stringify(value));

/** Joins already-encoded segments and signs the first two with `signer` (raw bytes out). */
function compact(header: unknown, payload: string, signer: (input: string) => Uint8Array): string {
  const input = `${json(header)}.${payload}`;
  return `${input}.${b64u(signer(input))}`;
}

const rs256 = (key: KeyObject) => (input: string) => sign('sha256', Buffer.from(input), key);
const hs256 = (secret: string | Uint8Array) => (input: string) =>
  createHmac('sha256', secret).update(input).digest();
const hs512 = (secret: string | Uint8Array) => (input: string) =>
  createHmac('sha512', secret).update(input).digest();
const unsigned = () => new Uint8Array(0);

function decodeSegment(token: string, index: number): Record<string, unknown> {
  const segment = token.split('.')[index];
  if (segment === undefined) throw new TypeError('the valid token is not a compact JWS');
  return JSON.parse(Buffer.from(segment, 'base64url').toString('utf8')) as Record<string, unknown>;
}

/**
 * Builds the table. Rows that target a claim check are signed by the issuer's real key (through
 * `kit.mint`) so only that check can refuse them; rows that target parsing or key selection are
 * signed by the attacker's key under the issuer's real `kid`.
 */
export async function buildAttackTokens(
  kit: AttackKit,
  attacker: AttackerKey,
): Promise<AttackCase[]> {
  const realKey = kit.jwks.keys.find((k) => k.kty === 'RSA') ?? kit.jwks.keys[0];
  const ecKey = kit.jwks.keys.find((k) => k.kty === 'EC');
  if (!realKey?.kid) throw new TypeError('the issuer JWKS has no key with a kid');
  const kid = realKey.kid;
  const validHeader = decodeSegment(kit.valid, 0);
  const claims = decodeSegment(kit.valid, 1);
  const [vh, vp, vs] = kit.valid.split('.') as [string, string, string];
  const now = Math.floor(Date.now() / 1000);
  const payload = json(claims);
  const foreign = (header: Record<string, unknown>, body = payload) =>
    compact({ typ: 'JWT', ...header }, body, rs256(attacker.privateKey));
  const pem = createPublicKey({ key: realKey as never, format: 'jwk' })
    .export({ type: 'spki', format: 'pem' })
    .toString();
  const { kid: _kid, alg: _alg, use: _use, ...bareJwk } = realKey;

  const refused = (
    name: string,
    token: string,
    statuses: readonly number[] = [401],
  ): AttackCase => ({
    name,
    authorization: `Bearer ${token}`,
    outcome: 'refused',
    statuses,
  });
  const mint = (change: TokenChange) => kit.mint(change);
  // RFC 6750 §2.1 with RFC 9110 §11.1: the scheme is case-insensitive and 1*SP separates it.
  const accepted = (name: string, authorization: string): AttackCase => ({
    name,
    authorization,
    outcome: 'accepted',
    statuses: [200],
  });

  const rows: AttackCase[] = [
    // RFC 8725 §2.1 / §3.1: the algorithm comes from the allowlist, never from the token.
    refused(
      'alg "none" with an empty signature',
      compact({ alg: 'none', typ: 'JWT' }, payload, unsigned),
    ),
    refused(
      'alg "None" with an empty signature',
      compact({ alg: 'None', typ: 'JWT' }, payload, unsigned),
    ),
    refused(
      'alg "NONE" with an empty signature',
      compact({ alg: 'NONE', typ: 'JWT' }, payload, unsigned),
    ),
    refused(
      'alg "none" keeping the real signature',
      `${json({ ...validHeader, alg: 'none' })}.${vp}.${vs}`,
    ),
    refused(
      'HS256 keyed with the issuer public key as PEM',
      compact({ alg: 'HS256', kid }, payload, hs256(pem)),
    ),
    refused(
      'HS256 keyed with the issuer public key as PEM without its final newline',
      compact({ alg: 'HS256', kid }, payload, hs256(pem.trimEnd())),
    ),
    refused(
      'HS256 keyed with the issuer public key as published JWK JSON',
      compact({ alg: 'HS256', kid }, payload, hs256(JSON.stringify(realKey))),
    ),
    refused(
      'HS256 keyed with the issuer public key as bare JWK JSON',
      compact({ alg: 'HS256', kid }, payload, hs256(JSON.stringify(bareJwk))),
    ),
    refused(
      'HS512 keyed with the issuer public key as PEM',
      compact({ alg: 'HS512', kid }, payload, hs512(pem)),
    ),
    // Key selection: only keys from the configured JWKS may verify.
    refused('RS256 signed by a foreign key under the real kid', foreign({ alg: 'RS256', kid })),
    refused('RS256 signed by a foreign key with no kid', foreign({ alg: 'RS256' })),
    refused(
      'attacker key embedded in the "jwk" header',
      foreign({ alg: 'RS256', kid, jwk: attacker.jwk }),
    ),
    refused(
      'attacker key embedded in "jwk" under its own kid',
      foreign({ alg: 'RS256', kid: attacker.kid, jwk: attacker.jwk }),
    ),
    refused(
      '"jku" pointing at an attacker JWKS',
      foreign({ alg: 'RS256', kid: attacker.kid, jku: kit.attackerJwksUrl }),
    ),
    refused(
      '"x5u" pointing at an attacker URL',
      foreign({ alg: 'RS256', kid: attacker.kid, x5u: kit.attackerJwksUrl }),
    ),
    refused(
      'kid that is a path traversal',
      foreign({ alg: 'RS256', kid: '../../../../../../dev/null' }),
    ),
    refused('kid that is an absolute file path', foreign({ alg: 'RS256', kid: '/etc/passwd' })),
    refused('kid carrying SQL', foreign({ alg: 'RS256', kid: "x' UNION SELECT 'secret' -- " })),
    refused('kid of 10 KiB', foreign({ alg: 'RS256', kid: 'k'.repeat(10 * 1024) }), [400, 401]),
    refused('kid that is a number', foreign({ alg: 'RS256', kid: 1 })),
    refused('kid that is an object', foreign({ alg: 'RS256', kid: { $ne: null } })),
    refused('kid that is null', foreign({ alg: 'RS256', kid: null })),
    refused('kid that is an array of the real kid', foreign({ alg: 'RS256', kid: [kid] })),
    // CVE-2022-21449 ("psychic signatures"): r = s = 0 must never verify.
    refused(
      'ES256 with a zero signature (r = s = 0, raw)',
      compact({ alg: 'ES256', kid: ecKey?.kid ?? kid }, payload, () => new Uint8Array(64)),
    ),
    refused(
      'ES256 with a zero signature (r = s = 0, DER)',
      compact({ alg: 'ES256', kid: ecKey?.kid ?? kid }, payload, () =>
        Buffer.from('3006020100020100', 'hex'),
      ),
    ),
    // Compact serialization (RFC 7515 §7.1): exactly three base64url segments.
    refused('real token with its signature removed', `${vh}.${vp}.`),
    refused('real token with a truncated signature', `${vh}.${vp}.${vs.slice(0, -8)}`),
    refused('real token cut to two segments', `${vh}.${vp}`),
    refused('real token written twice with a dot between', `${kit.valid}.${kit.valid}`),
    refused('real token written twice back to back', `${kit.valid}${kit.valid}`),
    refused('real token with "=" padding on every segment', `${vh}==.${vp}==.${vs}==`),
    refused(
      'real token in standard base64 (+ and /)',
      `${vh}.${vp}.${vs.replace(/-/g, '+').replace(/_/g, '/')}+/`,
    ),
    refused(
      'real token with a non-base64 character in the payload',
      `${vh}.${vp.slice(0, 10)}*${vp.slice(10)}.${vs}`,
    ),
    refused(
      'real payload with scope escalated under the real signature',
      `${vh}.${json({ ...claims, scope: 'secrets:read admin' })}.${vs}`,
    ),
    refused(
      'real payload with another subject under the real signature',
      `${vh}.${json({ ...claims, sub: 'admin' })}.${vs}`,
    ),
    refused(
      'real header switched to RS512 under the real signature',
      `${json({ ...validHeader, alg: 'RS512' })}.${vp}.${vs}`,
    ),
    refused(
      'a JWE (five segments)',
      [
        json({ alg: 'RSA-OAEP-256', enc: 'A256GCM', kid }),
        b64u('k'.repeat(256)),
        b64u('iv12bytes!!!'),
        payload,
        b64u('tag16bytes......'),
      ].join('.'),
    ),
    // Payload shape (RFC 7519 §7.2: the claims set is a JSON object).
    refused('payload that is not JSON', foreign({ alg: 'RS256', kid }, b64u('not json at all {'))),
    refused('payload that is a JSON array', foreign({ alg: 'RS256', kid }, json([claims]))),
    refused(
      'payload nested 1,000 objects deep',
      foreign({ alg: 'RS256', kid }, b64u(`${'{"":'.repeat(1000)}1${'}'.repeat(1000)}`)),
    ),
    refused('payload that is a JSON string', foreign({ alg: 'RS256', kid }, json('secrets:read'))),
    // Claim checks, each on a token the real key signed (RFC 7519 §4.1, RFC 9068 §4).
    refused('exp as a numeric string', await mint({ claims: { exp: String(now + 3600) } })),
    refused('exp as a float in the past', await mint({ claims: { exp: now - 120.5 } })),
    refused('exp missing', await mint({ claims: { exp: null } })),
    refused(
      'exp in the past beyond the clock tolerance',
      await mint({ claims: { exp: now - 600, iat: now - 900 } }),
    ),
    refused(
      'nbf in the future beyond the clock tolerance',
      await mint({ claims: { nbf: now + 600 } }),
    ),
    refused('aud for another API', await mint({ claims: { aud: 'another-api' } })),
    refused('aud as an empty array', await mint({ claims: { aud: [] } })),
    refused('aud missing', await mint({ claims: { aud: null } })),
    refused('iss with a trailing slash', await mint({ claims: { iss: `${kit.issuer}/` } })),
    refused('iss of another issuer', await mint({ claims: { iss: 'https://evil.example' } })),
    refused(
      'crit naming an unknown extension',
      // jose (inside the IdP) refuses to sign an unknown crit, so the attacker's key signs it.
      foreign({ alg: 'RS256', kid, crit: ['urn:example:unknown'], 'urn:example:unknown': true }),
    ),
    refused('token of 17 KiB', await mint({ claims: { pad: 'p'.repeat(17 * 1024) } }), [400, 401]),
  ];
  if (kit.strictTyp) {
    rows.push(
      refused('typ "JWT" (at+jwt is required by default)', await mint({ header: { typ: 'JWT' } })),
    );
    rows.push(
      refused(
        'typ "JOSE" (at+jwt is required by default)',
        await mint({ header: { typ: 'JOSE' } }),
      ),
    );
    // RFC 7515 §4.1.9: the "application/" prefix of a typ media type may be omitted or present.
    const longTyp = await mint({ header: { typ: 'application/at+jwt' } });
    rows.push(accepted('typ "application/at+jwt" by default', `Bearer ${longTyp}`));
  }

  rows.push(
    accepted('the valid token itself', `Bearer ${kit.valid}`),
    accepted('scheme written "bearer"', `bearer ${kit.valid}`),
    accepted('scheme written "BEARER"', `BEARER ${kit.valid}`),
    accepted('"bearer" followed by three spaces', `bearer   ${kit.valid}`),
    accepted(
      'exp as a float in the future (RFC 7519 NumericDate)',
      `Bearer ${await mint({ claims: { exp: now + 3600.25 } })}`,
    ),
  );
  // RFC 7519 sets no upper bound on exp, the gate does (maxTokenAge, 24 h by default): a token
  // minted to live for a century is refused, and a huge exp never turns into a 500.
  rows.push(
    refused('exp 100 years ahead', await mint({ claims: { exp: now + 100 * 365 * 86_400 } })),
    refused('exp far in the future (year 9999)', await mint({ claims: { exp: 253402300799 } })),
    refused('exp of 1e308', await mint({ claims: { exp: 1e308 } })),
    refused(
      'exp - iat longer than the max token age, exp itself near',
      await mint({ claims: { iat: now - 2 * 3600, exp: now + 23 * 3600 } }),
    ),
  );
  rows.push(
    {
      name: 'scheme "Basic" with the valid token',
      authorization: `Basic ${kit.valid}`,
      outcome: 'refused',
      statuses: [401],
    },
    {
      name: 'the token with no scheme',
      authorization: kit.valid,
      outcome: 'refused',
      statuses: [401],
    },
    {
      name: 'scheme with an empty token',
      authorization: 'Bearer ',
      outcome: 'refused',
      statuses: [401],
    },
  );
  return rows;
}
