import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { statusOf } from '../testing/answer.js';
import type { IntrospectionIssuer } from '../config/model.js';
import { createOpaqueVerifier } from './opaque-verifier.js';
import { manualClock } from '../testing/fixtures.js';
import { buildService, type TestService } from '../testing/service.js';
import { signProof, thumbprintOf } from '../testing/dpop-proof.js';

/** A fake IdP whose answer per request the test sets; it records what it was sent. */
let answer: (req: IncomingMessage, body: string, res: ServerResponse) => void;
let seen: Array<{ authorization: string | undefined; body: string }> = [];
let base: string;
const server = createServer((req, res) => {
  let body = '';
  req.on('data', (chunk: Buffer) => (body += chunk.toString()));
  req.on('end', () => {
    seen.push({ authorization: req.headers.authorization, body });
    answer(req, body, res);
  });
});
const json = (res: ServerResponse, status: number, value: unknown) =>
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(() => new Promise((resolve) => server.close(resolve)));

const clock = manualClock();
/** The fake IdP's introspection issuer as the configuration file declares it. */
const introspectionEntry = () => ({
  type: 'introspection' as const,
  issuer: base,
  endpoint: `${base}/introspect`,
  clientId: 'gate',
  clientSecret: 'se:cret',
  audience: 'secret-gate-api',
});
/** The same issuer as a loaded configuration holds it, with every setting present. */
const introspection = (): IntrospectionIssuer => ({
  ...introspectionEntry(),
  cacheTtl: 60,
  timeout: 1,
  allowHttp: false,
  clientClaims: ['client_id'],
});

describe('introspection (RFC 7662)', () => {
  it('accepts an active token and caps its cache lifetime by cacheTtl', async () => {
    seen = [];
    answer = (_req, _body, res) =>
      json(res, 200, {
        active: true,
        sub: 'u1',
        client_id: 'spa-demo',
        scope: 'secrets:read',
        aud: 'secret-gate-api',
        exp: clock.seconds() + 3600,
      });
    const verified = await createOpaqueVerifier(introspection(), clock.now)('opaque-abc');
    expect(verified.identity).toEqual({
      sub: 'u1',
      client: 'spa-demo',
      scopes: ['secrets:read'],
      issuer: base,
    });
    expect(verified.exp).toBe(clock.seconds() + 60);
    expect(seen[0]!.authorization).toBe(
      `Basic ${Buffer.from('gate:se%3Acret').toString('base64')}`,
    );
    expect(new URLSearchParams(seen[0]!.body).get('token')).toBe('opaque-abc');
  });

  it.each([
    [
      'an inactive token',
      (res: ServerResponse) => json(res, 200, { active: false }),
      'token_inactive',
    ],
    [
      '"active" that is not true',
      (res: ServerResponse) => json(res, 200, { active: 'true' }),
      'token_inactive',
    ],
    [
      'an expired token',
      (res: ServerResponse) =>
        json(res, 200, { active: true, aud: 'secret-gate-api', exp: clock.seconds() - 1 }),
      'token_expired',
    ],
    [
      'another audience',
      (res: ServerResponse) => json(res, 200, { active: true, aud: 'other' }),
      'audience_mismatch',
    ],
    [
      'another issuer',
      (res: ServerResponse) =>
        json(res, 200, { active: true, aud: 'secret-gate-api', iss: 'https://evil' }),
      'issuer_unknown',
    ],
    [
      'an active token with no "aud" (issued for no API in particular)',
      (res: ServerResponse) => json(res, 200, { active: true, sub: 'u1' }),
      'audience_mismatch',
    ],
    [
      'an active token whose "aud" array names only other APIs',
      (res: ServerResponse) => json(res, 200, { active: true, aud: ['billing-api', 'other'] }),
      'audience_mismatch',
    ],
    [
      'a token_type that is not a string',
      (res: ServerResponse) =>
        json(res, 200, { active: true, aud: 'secret-gate-api', token_type: ['Bearer'] }),
      'token_inactive',
    ],
    [
      'a 401 (our credentials refused)',
      (res: ServerResponse) => json(res, 401, { error: 'invalid_client' }),
      'token_inactive',
    ],
    ['a 500', (res: ServerResponse) => json(res, 500, { error: 'boom' }), 'introspection_failed'],
    [
      'a redirect',
      (res: ServerResponse) => res.writeHead(302, { location: '/elsewhere' }).end(),
      'introspection_failed',
    ],
    [
      'a non-JSON 200',
      (res: ServerResponse) => res.writeHead(200).end('yes'),
      'introspection_failed',
    ],
    [
      'no answer within the timeout',
      (res: ServerResponse) => setTimeout(() => json(res, 200, { active: true }), 2500),
      'introspection_failed',
    ],
  ])('refuses %s', async (_title, reply, code) => {
    answer = (_req, _body, res) => reply(res);
    await expect(
      createOpaqueVerifier(introspection(), clock.now)('opaque-abc'),
    ).rejects.toMatchObject({ code });
  });

  it.each([
    'refresh_token',
    'Refresh',
    'id_token',
    'urn:ietf:params:oauth:token-type:refresh_token',
  ])(
    'refuses an active token of type "%s" (RFC 7662 token_type, RFC 6749 §1.5)',
    async (tokenType) => {
      answer = (_req, _body, res) =>
        json(res, 200, { active: true, aud: 'secret-gate-api', token_type: tokenType });
      await expect(
        createOpaqueVerifier(introspection(), clock.now)('opaque-abc'),
      ).rejects.toMatchObject({
        code: 'token_inactive',
        message: '"token_type" in the introspection answer is not an access token',
      });
    },
  );

  it.each(['Bearer', 'bearer', 'access_token', 'urn:ietf:params:oauth:token-type:access_token'])(
    'accepts token_type "%s" (an access token)',
    async (tokenType) => {
      answer = (_req, _body, res) =>
        json(res, 200, {
          active: true,
          sub: 'u1',
          client_id: 'spa-demo',
          aud: ['x', 'secret-gate-api'],
          token_type: tokenType,
        });
      const verified = await createOpaqueVerifier(introspection(), clock.now)('opaque-abc');
      expect(verified.identity.sub).toBe('u1');
    },
  );
});

describe('DPoP-bound introspected tokens (RFC 9449 §6.2)', () => {
  const ORIGIN = 'https://gate.example.com';
  let jkt: string;
  const services: Partial<Record<'off' | 'allowed' | 'required', TestService>> = {};
  const boundAnswer = () => ({
    active: true,
    sub: 'u-bound',
    client_id: 'spa-demo',
    scope: 'secrets:read',
    aud: 'secret-gate-api',
    token_type: 'DPoP',
    cnf: { jkt },
    exp: clock.seconds() + 3600,
  });

  beforeAll(async () => {
    jkt = await thumbprintOf('ec');
    for (const mode of ['off', 'allowed', 'required'] as const) {
      const built = buildService(
        {},
        {
          now: clock.now,
          file: {
            issuers: [introspectionEntry()],
            policies: { secret: { issuers: [base], scopes: ['secrets:read'], dpop: mode } },
          },
        },
      );
      services[mode] = built;
      await built.service.start();
    }
  });
  afterAll(async () => {
    await Promise.all(Object.values(services).map((built) => built.service.stop(0)));
  });

  const ask = async (
    mode: 'off' | 'allowed' | 'required',
    scheme: 'Bearer' | 'DPoP',
    token: string,
    withProof: boolean,
  ) =>
    services[mode]!.service.authorize({
      policy: 'secret',
      authorization: `${scheme} ${token}`,
      dpop: withProof
        ? await signProof({ htu: `${ORIGIN}/secret`, accessToken: token, iat: clock.seconds() })
        : undefined,
      originalMethod: 'GET',
      originalUri: '/secret',
      originalOrigin: ORIGIN,
    });

  it('reads "cnf.jkt" from the answer as from a JWT', async () => {
    answer = (_req, _body, res) => json(res, 200, boundAnswer());
    const verified = await createOpaqueVerifier(introspection(), clock.now)('opaque-bound');
    expect(verified.jkt).toBe(jkt);
    expect(verified.identity.sub).toBe('u-bound');
  });

  it.each([
    ['another confirmation method', { 'x5t#S256': 'abc' }],
    ['a "jkt" that is not a SHA-256 thumbprint', { jkt: 'short' }],
    ['a "cnf" that is not an object', 'jkt'],
    ['"cnf": null', null],
  ])('refuses a "cnf" it cannot honour: %s', async (_title, cnf) => {
    answer = (_req, _body, res) => json(res, 200, { ...boundAnswer(), cnf });
    await expect(
      createOpaqueVerifier(introspection(), clock.now)('opaque-bound'),
    ).rejects.toMatchObject({
      code: 'claim_invalid',
      message: '"cnf" in the introspection answer is not a DPoP key binding this gate understands',
    });
  });

  it('refuses token_type "DPoP" without a "cnf.jkt" (a binding it could not check)', async () => {
    answer = (_req, _body, res) => json(res, 200, { ...boundAnswer(), cnf: undefined });
    await expect(
      createOpaqueVerifier(introspection(), clock.now)('opaque-bound'),
    ).rejects.toMatchObject({
      code: 'claim_invalid',
      message: '"token_type" in the introspection answer is DPoP but it has no "cnf.jkt"',
    });
  });

  it.each(['off', 'allowed', 'required'] as const)(
    'dpop: %s refuses the bound token sent as Bearer with no proof, also from the cache',
    async (mode) => {
      answer = (_req, _body, res) => json(res, 200, boundAnswer());
      const token = `opaque-bearer-${mode}`;
      for (let round = 0; round < 2; round += 1) {
        const decision = await ask(mode, 'Bearer', token, false);
        expect(statusOf(decision)).toBe(401);
        expect(decision.reason).toBe('dpop_binding_mismatch');
      }
    },
  );

  it.each(['allowed', 'required'] as const)(
    'dpop: %s allows the bound token with a valid proof, and wants a proof every time',
    async (mode) => {
      seen = [];
      answer = (_req, _body, res) => json(res, 200, boundAnswer());
      const token = `opaque-proof-${mode}`;
      const first = await ask(mode, 'DPoP', token, true);
      expect(first.outcome).toBe('allow');
      expect(first.identity?.sub).toBe('u-bound');
      expect((await ask(mode, 'DPoP', token, true)).outcome).toBe('allow');
      expect(seen).toHaveLength(1);
      const noProof = await ask(mode, 'DPoP', token, false);
      expect(statusOf(noProof)).toBe(401);
      expect(noProof.reason).toBe('dpop_proof_missing');
    },
  );
});

describe('opaque tokens through authorize', () => {
  /** Active (with no scopes) for `token`, inactive for anything else. */
  const answerGood =
    (token: string) => (_req: IncomingMessage, body: string, res: ServerResponse) =>
      new URLSearchParams(body).get('token') === token
        ? json(res, 200, {
            active: true,
            sub: 'u3',
            client_id: 'spa-demo',
            aud: 'secret-gate-api',
          })
        : json(res, 200, { active: false });

  it('204 for an active token, 401 otherwise, 403 for a policy whose scopes it lacks; answers are cached for cacheTtl', async () => {
    const { service } = buildService(
      {},
      {
        now: clock.now,
        file: {
          issuers: [{ ...introspectionEntry(), cacheTtl: 30 }],
          policies: {
            default: { issuers: [base] },
            secret: { issuers: [base], scopes: ['secrets:read'] },
          },
        },
      },
    );
    answer = answerGood('good');
    seen = [];
    expect(statusOf(await service.authorize({ authorization: 'Bearer good' }))).toBe(204);
    expect(statusOf(await service.authorize({ authorization: 'Bearer good' }))).toBe(204);
    expect(seen).toHaveLength(1);
    expect(statusOf(await service.authorize({ authorization: 'Bearer bad' }))).toBe(401);
    expect(
      statusOf(await service.authorize({ authorization: 'Bearer good', policy: 'secret' })),
    ).toBe(403);
    clock.advance(31);
    seen = [];
    expect(statusOf(await service.authorize({ authorization: 'Bearer good' }))).toBe(204);
    expect(seen).toHaveLength(1);
  });

  it('a JWT-shaped token that names no JWT issuer goes to the policy opaque issuer', async () => {
    const { service } = buildService(
      {},
      {
        now: clock.now,
        file: { issuers: [introspectionEntry()], policies: { default: { issuers: [base] } } },
      },
    );
    const jwtShaped = `${Buffer.from('{"alg":"RS256"}').toString('base64url')}.${Buffer.from('{"iss":"elsewhere"}').toString('base64url')}.c2ln`;
    answer = answerGood(jwtShaped);
    const decision = await service.authorize({ authorization: `Bearer ${jwtShaped}` });
    expect(decision).toMatchObject({ outcome: 'allow', identity: { sub: 'u3' } });
  });
});
