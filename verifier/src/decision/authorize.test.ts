import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answerOf, statusOf } from '../testing/answer.js';
import { base64url, importJWK, SignJWT } from 'jose';
import { createAuthorizer } from './authorize.js';
import { loadConfig } from '../config/load.js';
import { createTokenCache } from '../token/token-cache.js';
import { MAX_TOKEN_BYTES } from '../token/token-shape.js';
import { createTokenVerifier } from '../token/token-verifier.js';
import type { Decision } from './decision.js';
import type { JwtIssuer } from '../config/model.js';
import { createJwtVerifier, type JwtVerifier } from '../token/jwt-verifier.js';
import type { KeySet } from '../token/key-set.js';
import type { VerifiedToken } from '../token/verified-token.js';
import { secretSetName } from '../http/verify-answer.js';
import {
  AUDIENCE,
  captureLogger,
  ISSUER,
  manualClock,
  mintToken,
  PRIVATE_JWKS,
  publicJwk,
  signRs256,
  startJwksServer,
  type JwksServer,
  type MintOptions,
} from '../testing/fixtures.js';
import { buildService, type TestService } from '../testing/service.js';

const clock = manualClock();
const T = clock.seconds();
let jwks: JwksServer;
let plain: TestService;
let strict: TestService;

beforeAll(async () => {
  jwks = await startJwksServer(['rsaA', 'ec']);
  const env = {
    VERIFIER_ISSUER: ISSUER,
    VERIFIER_AUDIENCE: AUDIENCE,
    VERIFIER_JWKS_URI: jwks.url,
    VERIFIER_REQUIRED_SCOPES: 'secrets:read',
    VERIFIER_CLOCK_TOLERANCE: '30s',
  };
  plain = buildService({ ...env, VERIFIER_REQUIRE_TYP: 'off' }, { now: clock.now });
  // No VERIFIER_REQUIRE_TYP: RFC 9068 `typ: at+jwt` is what an issuer gets by default.
  strict = buildService(env, { now: clock.now });
  await plain.service.start();
  await strict.service.start();
});
afterAll(async () => {
  await plain.service.stop(0);
  await strict.service.stop(0);
  await jwks.close();
});

/** What a stub verifier says it verified: a token of `client` that lives until `exp`. */
const verifiedAs = (client: string, exp: number): VerifiedToken => ({
  identity: { sub: 'user-1', client, scopes: ['secrets:read'], issuer: ISSUER },
  exp,
  nbf: undefined,
  kid: PRIVATE_JWKS.rsaA.kid,
});

const mint = (options: MintOptions = {}) => mintToken({ now: T, ...options });
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const header = (decision: Decision, name: string) =>
  answerOf(decision).headers.find(([key]) => key === name)?.[1];

/** Hand-built compact JWS pieces for tokens jose refuses to sign. */
const segment = (value: unknown) => base64url.encode(JSON.stringify(value));
const claimsAt = (extra: Record<string, unknown> = {}) => ({
  iss: ISSUER,
  aud: AUDIENCE,
  sub: 'user-1',
  scope: 'secrets:read',
  iat: T,
  exp: T + 300,
  ...extra,
});

async function hmacToken(): Promise<string> {
  return new SignJWT(claimsAt())
    .setProtectedHeader({ alg: 'HS256', kid: 'rsaA-2026' })
    .sign(new TextEncoder().encode('a-shared-secret-of-32-bytes-long!'));
}

async function embeddedKeyToken(headerName: 'jwk' | 'jku' | 'x5u' | 'x5c'): Promise<string> {
  // Signed by the attacker's key, which it also points to: a verifier that trusts the header would accept it.
  const attacker = PRIVATE_JWKS.attacker;
  const values = {
    jwk: publicJwk('attacker'),
    jku: 'https://evil.test/jwks',
    x5u: 'https://evil.test/cert',
    x5c: ['MIIBfake'],
  };
  return new SignJWT(claimsAt())
    .setProtectedHeader({
      alg: 'RS256',
      kid: PRIVATE_JWKS.rsaA.kid,
      [headerName]: values[headerName],
    })
    .sign(await importJWK(attacker, 'RS256'));
}

type Row = [
  title: string,
  make: () => Promise<string | undefined>,
  status: number,
  reason: string,
  service?: 'strict',
];

const matrix: Row[] = [
  ['accepts a valid RS256 access token', () => mint(), 204, 'allowed'],
  ['accepts a valid ES256 access token', () => mint({ key: 'ec' }), 204, 'allowed'],
  [
    'accepts an `aud` array that contains the audience',
    () => mint({ claims: { aud: ['other', AUDIENCE] } }),
    204,
    'allowed',
  ],
  [
    'accepts `scp` as an array of scopes',
    () => mint({ claims: { scope: undefined, scp: ['secrets:read'] } }),
    204,
    'allowed',
  ],
  [
    'accepts a token expired by less than the tolerance',
    () => mint({ claims: { exp: T - 10 } }),
    204,
    'allowed',
  ],
  [
    'accepts `nbf` in the future by less than the tolerance',
    () => mint({ claims: { nbf: T + 10 } }),
    204,
    'allowed',
  ],
  ['refuses a request without Authorization', async () => undefined, 401, 'token_missing'],
  [
    'refuses a token over 16 KiB before parsing it',
    async () => 'a'.repeat(16_385),
    401,
    'token_too_large',
  ],
  ['refuses a token with two segments', async () => 'abc.def', 401, 'token_malformed'],
  [
    'refuses a token whose segments are not JSON',
    async () => 'abc.def.ghi',
    401,
    'token_malformed',
  ],
  [
    'refuses an `iss` that is not configured',
    () => mint({ claims: { iss: 'https://evil.test' } }),
    401,
    'issuer_unknown',
  ],
  [
    'refuses a token without `iss`',
    () => mint({ claims: { iss: undefined } }),
    401,
    'issuer_unknown',
  ],
  [
    'refuses `alg: none`',
    async () => `${segment({ alg: 'none', typ: 'at+jwt' })}.${segment(claimsAt())}.`,
    401,
    'token_malformed',
  ],
  [
    'refuses `alg: none` with a dummy signature',
    async () => `${segment({ alg: 'none' })}.${segment(claimsAt())}.c2ln`,
    401,
    'alg_not_allowed',
  ],
  ['refuses an HMAC `alg`', hmacToken, 401, 'alg_not_allowed'],
  [
    'ignores a `jwk` header (the key comes from the JWKS only)',
    () => embeddedKeyToken('jwk'),
    401,
    'signature_invalid',
  ],
  ['ignores a `jku` header', () => embeddedKeyToken('jku'), 401, 'signature_invalid'],
  ['ignores an `x5u` header', () => embeddedKeyToken('x5u'), 401, 'signature_invalid'],
  ['ignores an `x5c` header', () => embeddedKeyToken('x5c'), 401, 'signature_invalid'],
  [
    'refuses a tampered payload',
    async () => {
      const [h, , s] = (await mint()).split('.');
      return `${h}.${segment(claimsAt({ sub: 'admin' }))}.${s}`;
    },
    401,
    'signature_invalid',
  ],
  [
    'refuses an unknown `crit` extension',
    async () =>
      signRs256(
        {
          alg: 'RS256',
          kid: PRIVATE_JWKS.rsaA.kid,
          crit: ['urn:example:unknown'],
          'urn:example:unknown': true,
        },
        claimsAt(),
      ),
    401,
    'crit_unsupported',
  ],
  [
    'accepts a hand-signed token (the crit row is not a signing artefact)',
    async () =>
      signRs256({ alg: 'RS256', kid: PRIVATE_JWKS.rsaA.kid }, { ...claimsAt(), azp: 'spa-demo' }),
    204,
    'allowed',
  ],
  [
    'refuses a token without `exp`',
    () => mint({ claims: { exp: undefined } }),
    401,
    'claim_invalid',
  ],
  [
    'refuses a token expired beyond the tolerance',
    () => mint({ claims: { exp: T - 31 } }),
    401,
    'token_expired',
  ],
  [
    'refuses `nbf` in the future beyond the tolerance',
    () => mint({ claims: { nbf: T + 31 } }),
    401,
    'token_not_yet_valid',
  ],
  [
    'refuses `iat` in the future beyond the tolerance',
    () => mint({ claims: { iat: T + 120 } }),
    401,
    'claim_invalid',
  ],
  [
    'refuses an ID token for the SPA (wrong `aud`)',
    () => mint({ claims: { aud: 'spa-demo' } }),
    401,
    'audience_mismatch',
  ],
  [
    'refuses a token signed by a key that is not in the JWKS',
    () => mint({ key: 'attacker' }),
    401,
    'key_unknown',
  ],
  [
    'answers 403 when a required scope is missing',
    () => mint({ claims: { scope: 'openid profile' } }),
    403,
    'scope_insufficient',
  ],
  [
    'refuses `exp` 100 years ahead (longer than the 24h max token age)',
    () => mint({ claims: { exp: T + 100 * 365 * 86_400 } }),
    401,
    'claim_invalid',
  ],
  [
    'refuses `exp` in the year 9999',
    () => mint({ claims: { exp: 253402300799 } }),
    401,
    'claim_invalid',
  ],
  [
    'refuses a lifetime `exp - iat` over the max token age even when `exp` is near',
    () => mint({ claims: { iat: T - 2 * 3600, exp: T + 23 * 3600 } }),
    401,
    'claim_invalid',
  ],
  [
    'accepts a token that lives exactly the max token age',
    () => mint({ claims: { iat: T, exp: T + 86_400 } }),
    204,
    'allowed',
  ],
  ['by default accepts `typ: at+jwt`', () => mint(), 204, 'allowed', 'strict'],
  [
    'by default accepts `typ: application/at+jwt`',
    () => mint({ header: { typ: 'application/at+jwt' } }),
    204,
    'allowed',
    'strict',
  ],
  [
    'by default refuses `typ: JWT` (an ID token or another JWT)',
    () => mint({ header: { typ: 'JWT' } }),
    401,
    'typ_mismatch',
    'strict',
  ],
  [
    'by default refuses a missing `typ`',
    () => mint({ header: { typ: undefined } }),
    401,
    'typ_mismatch',
    'strict',
  ],
];

describe('authorize: the claim matrix', () => {
  it.each(matrix)('%s', async (_title, make, status, reason, which) => {
    const token = await make();
    const { service } = which === 'strict' ? strict : plain;
    const decision = await service.authorize({ ...(token === undefined ? {} : bearer(token)) });
    expect({ status: statusOf(decision), reason: decision.reason }).toEqual({ status, reason });
  });
});

describe('authorize: answers', () => {
  it('an allow carries the edge TTL, the client and the secret set name, and nothing else', async () => {
    const decision = await plain.service.authorize(bearer(await mint()));
    expect(answerOf(decision).headers).toEqual([
      ['X-Accel-Expires', '5'],
      ['X-Auth-Client', 'spa-demo'],
      ['X-Auth-Set', secretSetName(ISSUER, 'spa-demo')],
    ]);
  });

  it('decides a new token under a key already known at once, with no promise, as a cached one', async () => {
    await plain.service.authorize(bearer(await mint({ claims: { jti: 'first' } })));
    const fresh = plain.service.authorize(bearer(await mint({ claims: { jti: 'second' } })));
    expect(fresh).not.toBeInstanceOf(Promise);
    expect((fresh as Decision).outcome).toBe('allow');
    // The same known key refuses a signature it did not make, at once too.
    const [h, p] = (await mint({ claims: { jti: 'third' } })).split('.');
    const [, , s] = (await mint({ claims: { jti: 'fourth' } })).split('.');
    const forged = plain.service.authorize(bearer(`${h}.${p}.${s}`));
    expect(forged).not.toBeInstanceOf(Promise);
    expect((forged as Decision).reason).toBe('signature_invalid');
  });

  it('names the set by issuer and client: opaque, path-safe, different for another issuer', () => {
    const name = secretSetName(ISSUER, 'spa-demo');
    expect(name).toMatch(/^c[0-9a-f]{32}$/);
    expect(secretSetName('https://other.example', 'spa-demo')).not.toBe(name);
    expect(secretSetName(ISSUER, '../../etc/passwd')).toMatch(/^c[0-9a-f]{32}$/);
    expect(secretSetName(ISSUER, '')).toBeUndefined();
  });

  it('the client id falls back from azp to client_id to cid', async () => {
    const decision = await plain.service.authorize(
      bearer(await mint({ claims: { azp: undefined, client_id: 'partner-app' } })),
    );
    expect(header(decision, 'X-Auth-Client')).toBe('partner-app');
  });

  it('claims other than the client never reach a header (no subject, no scopes)', async () => {
    const decision = await plain.service.authorize(
      bearer(
        await mint({
          claims: {
            sub: 'evil\r\nSet-Cookie: x=1',
            scope: `secrets:read ${'s'.repeat(400)} ${'t'.repeat(400)} ${'u'.repeat(400)}`,
          },
        }),
      ),
    );
    expect(decision.outcome).toBe('allow');
    expect(answerOf(decision).headers.map(([name]) => name)).toEqual([
      'X-Accel-Expires',
      'X-Auth-Client',
      'X-Auth-Set',
    ]);
    expect(answerOf(decision).headers.join('\n')).not.toMatch(/\r|Set-Cookie: x/);
  });

  it('a missing token gets a challenge without an error code (RFC 6750 §3.1)', async () => {
    const decision = await plain.service.authorize({});
    expect(answerOf(decision).headers).toEqual([
      ['WWW-Authenticate', 'Bearer realm="secret-gate"'],
      ['X-Accel-Expires', '0'],
      ['X-Auth-Reason', 'token_missing'],
    ]);
  });

  it('a non-Bearer scheme counts as no token', async () => {
    const decision = await plain.service.authorize({ authorization: 'Basic dXNlcjpwYXNz' });
    expect(decision.reason).toBe('token_missing');
  });

  it('a bad token gets error="invalid_token"', async () => {
    const decision = await plain.service.authorize(bearer('abc.def.ghi'));
    expect(answerOf(decision).headers).toEqual([
      ['WWW-Authenticate', 'Bearer realm="secret-gate", error="invalid_token"'],
      ['X-Accel-Expires', '0'],
      ['X-Auth-Reason', 'token_malformed'],
    ]);
  });

  it('a missing scope gets the insufficient_scope challenge naming the required scopes', async () => {
    const decision = await plain.service.authorize(
      bearer(await mint({ claims: { scope: 'openid' } })),
    );
    expect(answerOf(decision).headers).toEqual([
      [
        'X-Auth-Challenge',
        'Bearer realm="secret-gate", error="insufficient_scope", scope="secrets:read"',
      ],
      ['X-Accel-Expires', '5'],
      ['X-Auth-Reason', 'scope_insufficient'],
    ]);
  });

  it('an unknown policy is a 403 and is logged as a configuration problem', async () => {
    const decision = await plain.service.authorize({ ...bearer(await mint()), policy: 'nope' });
    expect(statusOf(decision)).toBe(403);
    expect(decision.reason).toBe('policy_unknown');
    expect(plain.lines.some((line) => line.includes('configuration problem'))).toBe(true);
  });

  it('an unknown issuer is refused without any key fetch', async () => {
    const before = jwks.hits;
    await plain.service.authorize(
      bearer(await mint({ claims: { iss: 'https://evil.test' }, header: { kid: 'fresh-kid' } })),
    );
    expect(jwks.hits).toBe(before);
  });

  it('an oversized token is refused without any key fetch', async () => {
    const before = jwks.hits;
    const decision = await plain.service.authorize(
      bearer(`${'a'.repeat(9000)}.${'b'.repeat(9000)}.c`),
    );
    expect(decision.reason).toBe('token_too_large');
    expect(jwks.hits).toBe(before);
  });

  it('a denial is logged at info with reason and fingerprint, never the token', async () => {
    const token = await mint({ claims: { aud: 'spa-demo', sub: 'log-check' } });
    plain.lines.length = 0;
    await plain.service.authorize({
      ...bearer(token),
      originalUri: '/secret',
      originalMethod: 'GET',
    });
    const entry = JSON.parse(plain.lines.find((line) => line.includes('"denied"'))!) as Record<
      string,
      unknown
    >;
    expect(entry).toMatchObject({
      level: 30,
      reason: 'audience_mismatch',
      uri: '/secret',
      method: 'GET',
      // Which claim failed and what this issuer expected: configuration, not the token's content.
      detail: `"aud" claim does not contain the configured audience: expected "${AUDIENCE}"`,
    });
    expect(entry.fp).toBe(createHash('sha256').update(token).digest('hex').slice(0, 8));
    expect(plain.lines.join('\n')).not.toContain(token.split('.')[2]!);
    expect(plain.lines.join('\n')).not.toContain(token.split('.')[1]!);
  });
  it.each([
    // As an IdP issues one with many groups: signed, 17 KiB (past the header's bound too).
    [
      'a signed 17 KiB token',
      () =>
        mint({
          claims: {
            aud: 'spa-demo',
            sub: 'large-check',
            groups: Array.from({ length: 1300 }, (_, i) => `group-${i}`),
          },
        }),
    ],
    ['a token one byte over', () => Promise.resolve(`${'x'.repeat(MAX_TOKEN_BYTES)}y`)],
  ])('%s is logged with the limit it passed, never the token', async (_title, tokenOf) => {
    const token = await tokenOf();
    expect(token.length).toBeGreaterThan(MAX_TOKEN_BYTES);
    plain.lines.length = 0;
    await plain.service.authorize({
      ...bearer(token),
      originalUri: '/secret',
      originalMethod: 'GET',
    });
    const line = plain.lines.find((l) => l.includes('"denied"'))!;
    expect(JSON.parse(line)).toMatchObject({
      level: 30,
      reason: 'token_too_large',
      detail: `token is larger than ${MAX_TOKEN_BYTES} bytes`,
    });
    // Bounded: the line's own fields and the token's fingerprint, nothing of the token itself.
    expect(line.length).toBeLessThan(1024);
    for (const part of token.split('.')) expect(plain.lines.join('\n')).not.toContain(part);
  });
  it.each([
    ['an encoded query', '/secret%3Faccess_token=', '/secret[cut]'],
    ['an encoded fragment', '/secret%23access_token=', '/secret[cut]'],
    ['a token as a path segment', '/x/', '/x/[cut]'],
  ])('a denial logs the path without %s (a hidden token)', async (_title, before, logged) => {
    const token = await mint({ claims: { aud: 'spa-demo', sub: 'path-check' } });
    plain.lines.length = 0;
    await plain.service.authorize({
      ...bearer('garbage'),
      originalUri: `${before}${token}/../../secret`,
      originalMethod: 'GET',
    });
    const entry = JSON.parse(plain.lines.find((line) => line.includes('"denied"'))!) as Record<
      string,
      unknown
    >;
    expect(entry.uri).toBe(logged);
    for (const part of token.split('.')) expect(plain.lines.join('\n')).not.toContain(part);
  });

  it('a denial logs at most 200 characters of a 16 KB path', async () => {
    plain.lines.length = 0;
    await plain.service.authorize({
      ...bearer('garbage'),
      originalUri: `/${'a/'.repeat(8000)}secret`,
      originalMethod: 'GET',
    });
    const entry = JSON.parse(plain.lines.find((line) => line.includes('"denied"'))!) as Record<
      string,
      unknown
    >;
    expect(entry.uri).toBe(`/${'a/'.repeat(99)}a[cut]`);
  });
});

describe('authorize: policies from a config file', () => {
  it('a policy refuses an issuer it does not list, before any key fetch', async () => {
    const other = await startJwksServer(['rsaB']);
    const { service } = buildService(
      {},
      {
        now: clock.now,
        file: {
          issuers: [
            { issuer: ISSUER, audience: AUDIENCE, jwksUri: jwks.url },
            { issuer: 'https://other.test', audience: AUDIENCE, jwksUri: other.url },
          ],
          policies: {
            secret: { issuers: [ISSUER], scopes: ['secrets:read'] },
            partner: { issuers: ['https://other.test'] },
          },
        },
      },
    );
    await service.start();
    const fromOther = await mint({ key: 'rsaB', claims: { iss: 'https://other.test' } });
    const hits = other.hits;
    expect((await service.authorize({ ...bearer(fromOther), policy: 'secret' })).reason).toBe(
      'issuer_not_allowed',
    );
    expect(other.hits).toBe(hits);
    expect(statusOf(await service.authorize({ ...bearer(fromOther), policy: 'partner' }))).toBe(
      204,
    );
    // Now cached: the hit is still checked against the asking policy.
    expect((await service.authorize({ ...bearer(fromOther), policy: 'secret' })).reason).toBe(
      'issuer_not_allowed',
    );
    expect((await service.authorize(bearer(await mint()))).reason).toBe('policy_unknown');
    await service.stop(0);
    await other.close();
  });
});

describe('authorize: a policy that lists its clients', () => {
  it("serves only the listed clients' tokens, cached or not, and answers 403 client_not_allowed to the others", async () => {
    const { service, lines } = buildService(
      {},
      {
        now: clock.now,
        file: {
          issuers: [{ issuer: ISSUER, audience: AUDIENCE, jwksUri: jwks.url }],
          policies: {
            secret: { issuers: [ISSUER], clients: ['spa-demo'] },
            open: { issuers: [ISSUER] },
          },
        },
      },
    );
    await service.start();
    const listed = await mint();
    const other = await mint({ claims: { azp: 'another-app' } });
    for (let round = 0; round < 2; round++) {
      expect(statusOf(await service.authorize({ ...bearer(listed), policy: 'secret' }))).toBe(204);
      const refused = await service.authorize({ ...bearer(other), policy: 'secret' });
      expect({ status: statusOf(refused), reason: refused.reason }).toEqual({
        status: 403,
        reason: 'client_not_allowed',
      });
      // No scope would help: no `insufficient_scope` challenge.
      expect(header(refused, 'X-Auth-Challenge')).toBeUndefined();
      // Another policy of the same issuer without a list still serves that client.
      expect(statusOf(await service.authorize({ ...bearer(other), policy: 'open' }))).toBe(204);
    }
    const denied = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(denied).toContainEqual(
      expect.objectContaining({
        status: 403,
        reason: 'client_not_allowed',
        detail: 'client "another-app" is not one of the policy\'s clients',
      }),
    );
    await service.stop(0);
  });

  it('reads VERIFIER_ALLOWED_CLIENTS for the single-issuer policy', async () => {
    const { service } = buildService(
      {
        VERIFIER_ISSUER: ISSUER,
        VERIFIER_AUDIENCE: AUDIENCE,
        VERIFIER_JWKS_URI: jwks.url,
        VERIFIER_ALLOWED_CLIENTS: 'spa-demo, admin-console',
      },
      { now: clock.now },
    );
    await service.start();
    expect(statusOf(await service.authorize(bearer(await mint())))).toBe(204);
    const admin = await mint({ claims: { azp: 'admin-console' } });
    expect(statusOf(await service.authorize(bearer(admin)))).toBe(204);
    const other = await mint({ claims: { azp: 'another-app' } });
    expect((await service.authorize(bearer(other))).reason).toBe('client_not_allowed');
    await service.stop(0);
  });
});

describe('authorize: the grant extension point', () => {
  it('adds its headers to every allowed answer of its policy, cached or not, and never to denials', async () => {
    const config = loadConfig({
      VERIFIER_ISSUER: ISSUER,
      VERIFIER_AUDIENCE: AUDIENCE,
      VERIFIER_REQUIRED_SCOPES: 'secrets:read',
    });
    const calls: Array<[number, number]> = [];
    const authorize = createAuthorizer({
      config,
      verifyToken: createTokenVerifier({
        config,
        verifiers: new Map([[ISSUER, async () => verifiedAs('spa-demo', T + 60)]]),
        cache: createTokenCache({ ...config.cache, now: clock.now }),
      }),
      logger: captureLogger().logger,
      now: clock.now,
      grants: new Map([
        [
          'default',
          async (now: number, exp: number) => {
            calls.push([now, exp]);
            return [['X-Grant', String(calls.length)] as const];
          },
        ],
      ]),
    });
    const token = await mint();
    const first = await authorize(bearer(token));
    const cached = await authorize(bearer(token));
    expect(header(first, 'X-Grant')).toBe('1');
    expect(header(cached, 'X-Grant')).toBe('2');
    expect(header(cached, 'X-Auth-Client')).toBe('spa-demo');
    // Told the time and the token's exp, so nothing it hands out outlives the token.
    expect(calls).toEqual([
      [T, T + 60],
      [T, T + 60],
    ]);
    const denied = await authorize({});
    expect(answerOf(denied).headers.some(([name]) => name === 'X-Grant')).toBe(false);
    expect(calls).toHaveLength(2);
  });
});

describe('authorize: unexpected failures', () => {
  const config = loadConfig({ VERIFIER_ISSUER: ISSUER, VERIFIER_AUDIENCE: AUDIENCE });
  const invalidToken = {
    status: 401,
    headers: [
      ['WWW-Authenticate', 'Bearer realm="secret-gate", error="invalid_token"'],
      ['X-Accel-Expires', '0'],
      // The log's reason, never `signature_invalid`.
      ['X-Auth-Reason', 'internal_error'],
    ],
  };
  const authorizerWith = (verify: JwtVerifier) => {
    const { logger, lines } = captureLogger();
    const authorize = createAuthorizer({
      config,
      verifyToken: createTokenVerifier({
        config,
        verifiers: new Map([[ISSUER, verify]]),
        cache: createTokenCache({ ...config.cache, now: clock.now }),
      }),
      logger,
    });
    return { authorize, lines };
  };

  it('answers a throw inside verification (the key set fails unexpectedly) as internal_error, never as a signature failure', async () => {
    const keySet = plain.service.keySets.get(ISSUER)!;
    const broken: KeySet = {
      ...keySet,
      // No key known ahead, so the verification asks the failing `getKey`.
      knownKey: () => undefined,
      getKey: () => Promise.reject(new RangeError('a bug in the key set')),
    };
    const issuer = config.issuers.get(ISSUER) as JwtIssuer;
    const { authorize, lines } = authorizerWith(createJwtVerifier(issuer, broken, clock.now));
    const decision = await authorize(bearer(await mint()));
    expect(decision).toMatchObject({ outcome: 'deny', reason: 'internal_error' });
    // A 401 NGINX turns into its JSON 401: never a 500, never a secret.
    expect(answerOf(decision)).toEqual(invalidToken);
    expect(lines.join('\n')).toContain('unexpected verification failure');
    expect(lines.join('\n')).toContain('a bug in the key set');
  });

  it('answers a verifier that throws synchronously the same way', async () => {
    const { authorize } = authorizerWith(() => {
      throw new RangeError('a bug in a verifier');
    });
    const decision = await authorize(bearer(await mint()));
    expect(decision.reason).toBe('internal_error');
    expect(answerOf(decision)).toEqual(invalidToken);
  });
});

describe('authorize: a decision is plain data', () => {
  it('an allow names the outcome, reason, identity and edge TTL, and nothing shaped like HTTP', async () => {
    const decision = await plain.service.authorize(bearer(await mint()));
    expect(Object.keys(decision).sort()).toEqual(['edgeTtl', 'identity', 'outcome', 'reason']);
    expect(decision).toMatchObject({ outcome: 'allow', reason: 'allowed', edgeTtl: 5 });
  });
});
