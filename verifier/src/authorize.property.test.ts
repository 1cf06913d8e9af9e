// Properties of the auth oracle under hostile input (fast-check): whatever an attacker does to a
// valid token it never becomes an allow, arbitrary header bytes never throw, and only 401/403 come
// back for them. Real jose crypto and the real decision cache; keys are local, the clock is frozen.
import { createLocalJWKSet, exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { statusOf } from './testing/answer.js';
import { createAuthorizer, type Authorize } from './decision/authorize.js';
import type { JwtIssuer, PolicyConfig } from './config/model.js';
import { createTokenCache } from './token/token-cache.js';
import { createTokenVerifier } from './token/token-verifier.js';
import { createJwtVerifier } from './token/jwt-verifier.js';
import type { KeySet } from './token/key-set.js';
import { createLogger } from './log.js';
import { RFC9068_RULES } from './testing/fixtures.js';

const ISS = 'https://idp.example';
const AUD = 'secret-gate-api';
const NOW = Date.UTC(2026, 0, 15, 12, 0, 0);
const NOW_S = NOW / 1000;
const TOLERANCE = 30;

const issuer: JwtIssuer = {
  type: 'jwt',
  issuer: ISS,
  audience: AUD,
  jwksUri: `${ISS}/jwks`,
  algorithms: ['RS256', 'ES256'],
  clockTolerance: TOLERANCE,
  requireTyp: 'at+jwt',
  maxTokenAge: 86_400,
  allowHttp: false,
  clientClaims: ['client_id', 'azp'],
  ...RFC9068_RULES,
  logoutAudiences: [],
};
const policy: PolicyConfig = {
  name: 'secret',
  issuers: [ISS],
  scopes: ['secrets:read'],
  cloudfront: undefined,
  dpop: 'off',
  revocation: 'checked',
};

/** The issuer's published keys, held locally: the network side of key-set.ts has its own tests. */
function localKeySet(jwks: { keys: JWK[] }): KeySet {
  const getter = createLocalJWKSet(jwks);
  return {
    issuer: ISS,
    start: async () => {},
    isReady: () => true,
    trustedUntilSeconds: () => Infinity,
    getKey: (header) => getter(header),
    refresh: async () => false,
    stop: () => {},
  };
}

let authorize: Authorize;
let valid: string;
let sign: (claims: Record<string, unknown>) => Promise<string>;

beforeAll(async () => {
  const { privateKey, publicKey } = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
  const now = () => NOW_S;
  const verifier = createJwtVerifier(issuer, localKeySet({ keys: [jwk] }), now);
  const config = { issuers: new Map([[ISS, issuer]]), policies: new Map([['secret', policy]]) };
  authorize = createAuthorizer({
    config,
    verifyToken: createTokenVerifier({
      config,
      verifiers: new Map([[ISS, verifier]]),
      cache: createTokenCache({
        maxEntries: 10_000,
        maxBytes: 16 * 1024 * 1024,
        maxTtl: 300,
        now,
      }),
    }),
    logger: createLogger('silent'),
  });
  sign = (claims) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', kid: 'k1', typ: 'at+jwt' })
      .sign(privateKey);
  valid = await sign({
    iss: ISS,
    aud: AUD,
    sub: 'user-1',
    client_id: 'spa-demo',
    scope: 'openid secrets:read',
    iat: NOW_S - 60,
    nbf: NOW_S - 60,
    exp: NOW_S + 600,
  });
});

const ask = async (authorization: string | undefined, which = 'secret') =>
  authorize({ authorization, policy: which, originalUri: '/secret', originalMethod: 'GET' });

/** Two tokens that verify over the same bytes: base64url's unused trailing bits may differ. */
function sameBytes(a: string, b: string): boolean {
  const [ah, ap, as] = a.split('.');
  const [bh, bp, bs] = b.split('.');
  if (a.split('.').length !== 3 || b.split('.').length !== 3 || ah !== bh || ap !== bp)
    return false;
  if (as === undefined || bs === undefined || !/^[A-Za-z0-9_-]*$/.test(bs)) return false;
  return Buffer.from(as, 'base64url').equals(Buffer.from(bs, 'base64url'));
}

/** The first value half of the time, otherwise one of the others. */
const mostly = (good: unknown, ...others: unknown[]) =>
  fc.oneof(fc.constant(good), fc.constantFrom(...others));

const B64U = [...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'];
const NOISE = [...B64U, '.', '=', '+', '/', ' ', '\t', '%', '"', '\u0000', '\u00e9'];

/** One edit to a token string: replace, insert or delete characters, or rearrange segments. */
const mutation = fc.oneof(
  fc.record({
    kind: fc.constant('replace' as const),
    at: fc.nat(),
    char: fc.constantFrom(...NOISE),
  }),
  fc.record({
    kind: fc.constant('insert' as const),
    at: fc.nat(),
    text: fc.string({ unit: fc.constantFrom(...NOISE), minLength: 1, maxLength: 8 }),
  }),
  fc.record({
    kind: fc.constant('delete' as const),
    at: fc.nat(),
    length: fc.integer({ min: 1, max: 40 }),
  }),
  fc.record({
    kind: fc.constant('swap' as const),
    a: fc.integer({ min: 0, max: 2 }),
    b: fc.integer({ min: 0, max: 2 }),
  }),
  fc.record({ kind: fc.constant('truncate' as const), keep: fc.nat() }),
);

type Mutation = typeof mutation extends fc.Arbitrary<infer M> ? M : never;

function mutate(token: string, m: Mutation): string {
  switch (m.kind) {
    case 'replace': {
      const i = m.at % token.length;
      return token.slice(0, i) + m.char + token.slice(i + 1);
    }
    case 'insert': {
      const i = m.at % (token.length + 1);
      return token.slice(0, i) + m.text + token.slice(i);
    }
    case 'delete': {
      const i = m.at % token.length;
      return token.slice(0, i) + token.slice(i + m.length);
    }
    case 'swap': {
      const parts = token.split('.');
      const a = parts[m.a]!;
      parts[m.a] = parts[m.b]!;
      parts[m.b] = a;
      return parts.join('.');
    }
    case 'truncate':
      return token.slice(0, m.keep % token.length);
  }
}

describe('authorize under hostile input', () => {
  it('allows the unmutated valid token (the baseline the properties move away from)', async () => {
    expect(statusOf(await ask(`Bearer ${valid}`))).toBe(204);
  });

  it('never allows a token changed by one to three random edits', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(mutation, { minLength: 1, maxLength: 3 }), async (edits) => {
        const token = edits.reduce(mutate, valid);
        fc.pre(token !== valid && !sameBytes(valid, token));
        const decision = await ask(`Bearer ${token}`);
        expect(statusOf(decision)).not.toBe(204);
        expect([401, 403]).toContain(statusOf(decision));
      }),
      { numRuns: 400 },
    );
  });

  it('never allows the valid signature over a payload with any claim changed', async () => {
    const [header, payload, signature] = valid.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<
      string,
      unknown
    >;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...Object.keys(claims), 'admin', 'scp'),
        fc.jsonValue(),
        async (name, value) => {
          const changed = Buffer.from(JSON.stringify({ ...claims, [name]: value })).toString(
            'base64url',
          );
          fc.pre(changed !== payload);
          expect(statusOf(await ask(`Bearer ${header}.${changed}.${signature}`))).toBe(401);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('allows a token signed by the real key only when iss, aud, exp, nbf and scope all hold', async () => {
    let allows = 0;
    // Each claim is right half of the time, so allows and near-misses are both common.
    const claimSets = fc.record(
      {
        iss: mostly(ISS, `${ISS}/`, 'https://evil.example', 'HTTPS://IDP.EXAMPLE', ''),
        aud: mostly(AUD, [AUD], ['other', AUD], 'other', [], [''], `${AUD} `),
        exp: mostly(
          NOW_S + 600,
          NOW_S - 1,
          NOW_S - TOLERANCE - 1,
          String(NOW_S + 600),
          1e308,
          -1,
          null,
        ),
        nbf: mostly(NOW_S - 10, NOW_S + TOLERANCE + 5, String(NOW_S)),
        scope: mostly(
          'secrets:read',
          'openid',
          'secrets:read2',
          ['secrets:read'],
          '',
          'openid secrets:read',
        ),
      },
      { requiredKeys: ['iss', 'aud', 'exp', 'scope'] },
    );
    await fc.assert(
      fc.asyncProperty(claimSets, async (claims) => {
        const token = await sign({ sub: 'user-1', client_id: 'spa-demo', ...claims });
        const decision = await ask(`Bearer ${token}`);
        expect([204, 401, 403]).toContain(statusOf(decision));
        if (statusOf(decision) !== 204) return;
        allows += 1;
        const aud = claims.aud;
        expect(claims.iss).toBe(ISS);
        expect(aud === AUD || (Array.isArray(aud) && aud.includes(AUD))).toBe(true);
        expect(typeof claims.exp === 'number' && claims.exp > NOW_S - TOLERANCE).toBe(true);
        expect(
          claims.nbf === undefined ||
            (typeof claims.nbf === 'number' && claims.nbf <= NOW_S + TOLERANCE),
        ).toBe(true);
        expect(
          typeof claims.scope === 'string' && claims.scope.split(' ').includes('secrets:read'),
        ).toBe(true);
      }),
      { numRuns: 400 },
    );
    // The property is only worth something if some generated tokens were in fact allowed.
    expect(allows).toBeGreaterThan(0);
  });

  it('never throws on random Authorization bytes and answers only 401 or 403', async () => {
    const header = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 300 }),
      fc.string({ unit: 'binary', maxLength: 300 }).map((s) => `Bearer ${s}`),
      fc
        .uint8Array({ maxLength: 9000 })
        .map((bytes) => `Bearer ${Buffer.from(bytes).toString('latin1')}`),
      fc
        .array(fc.string({ unit: fc.constantFrom(...B64U), maxLength: 60 }), { maxLength: 6 })
        .map((parts) => `bearer ${parts.join('.')}`),
    );
    await fc.assert(
      fc.asyncProperty(
        header,
        fc.constantFrom('secret', 'unknown-policy', ''),
        async (authorization, which) => {
          const decision = await ask(authorization, which);
          expect([401, 403]).toContain(statusOf(decision));
        },
      ),
      { numRuns: 500 },
    );
  });

  it('never throws on random request metadata around a valid token', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.option(fc.string({ unit: 'binary', maxLength: 200 })),
        fc.option(fc.string({ unit: 'binary', maxLength: 20 })),
        async (uri, method) => {
          const decision = await authorize({
            authorization: `Bearer ${valid}`,
            policy: 'secret',
            originalUri: uri ?? undefined,
            originalMethod: method ?? undefined,
          });
          expect(statusOf(decision)).toBe(204);
        },
      ),
      { numRuns: 100 },
    );
  });
});
