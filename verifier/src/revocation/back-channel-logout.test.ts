// POST /backchannel-logout as a specification: a valid logout token revokes the subject's older
// tokens at once (cached decisions included) and nothing else; each invalid variant gets its 400
// (the error code only; why goes to the log) and changes nothing; forgeries under a real key past
// that key's budget of failures get 429, while real logouts are still applied.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { statusOf } from '../testing/answer.js';
import { LOGOUT_EVENT, mintLogoutToken } from '../testing/event-tokens.js';
import {
  AUDIENCE,
  ISSUER,
  mintToken,
  PRIVATE_JWKS,
  signRs256,
  startJwksServer,
  type JwksServer,
} from '../testing/fixtures.js';
import { logoutIssuer } from '../testing/replicas.js';
import { buildService, type TestService } from '../testing/service.js';

let jwks: JwksServer;
let gate: TestService;

beforeAll(async () => {
  jwks = await startJwksServer(['rsaA']);
  gate = buildService(
    // A budget of failed signature checks no test here exhausts; the budget is tested below.
    {
      VERIFIER_REVOCATION_RECEIVER_RATE: '100000r/s',
      VERIFIER_REVOCATION_RECEIVER_BURST: '100000',
    },
    {
      file: {
        issuers: [
          logoutIssuer(jwks.url),
          { issuer: 'https://other.test', audience: AUDIENCE, jwksUri: jwks.url },
        ],
        policies: { secret: { issuers: [ISSUER], scopes: ['secrets:read'] } },
      },
    },
  );
  await gate.service.start();
});
afterAll(async () => {
  await gate.service.stop(0);
  await jwks.close();
});

const seconds = () => Math.floor(Date.now() / 1000);

function logout(body: string, contentType = 'application/x-www-form-urlencoded', at = gate) {
  return at.service.routes.receivers.get('/backchannel-logout')!({ contentType, body });
}
const form = (token: string) => `logout_token=${encodeURIComponent(token)}`;

async function secretStatus(token: string): Promise<{ status: number; reason: string }> {
  const decision = await gate.service.authorize({
    policy: 'secret',
    authorization: `Bearer ${token}`,
  });
  return { status: statusOf(decision), reason: decision.reason };
}

describe('a valid logout token', () => {
  it("refuses the subject's older tokens with 401 token_revoked, cached or not", async () => {
    const older = await mintToken({ claims: { sub: 'alice' }, now: seconds() - 10 });
    const uncached = await mintToken({ claims: { sub: 'alice', jti: 'b' }, now: seconds() - 5 });
    expect((await secretStatus(older)).status).toBe(204);

    const answer = await logout(form(await mintLogoutToken({ claims: { sub: 'alice' } })));
    expect(answer.status).toBe(200);
    expect(answer.headers).toContainEqual(['Cache-Control', 'no-store']);

    expect(await secretStatus(older)).toEqual({ status: 401, reason: 'token_revoked' });
    expect(await secretStatus(uncached)).toEqual({ status: 401, reason: 'token_revoked' });
  });

  it("keeps serving other subjects and the subject's newer tokens", async () => {
    await logout(form(await mintLogoutToken({ claims: { sub: 'bob' }, now: seconds() - 20 })));
    const other = await mintToken({ claims: { sub: 'carol' }, now: seconds() - 30 });
    const newer = await mintToken({ claims: { sub: 'bob' }, now: seconds() });
    expect((await secretStatus(other)).status).toBe(204);
    expect((await secretStatus(newer)).status).toBe(204);
  });

  it.each([
    ['typ JWT without exp (the BCL drafts, Glewlwyd)', { typ: 'JWT' }],
    ['typ application/jwt without exp', { typ: 'application/jwt' }],
    ['no typ and no exp', { typ: undefined }],
  ])('accepts a logout token with %s, bounded by its iat', async (_name, header) => {
    const subject = `draft-${String(header.typ)}`;
    const older = await mintToken({ claims: { sub: subject }, now: seconds() - 10 });
    const token = await mintLogoutToken({ claims: { sub: subject, exp: undefined }, header });
    expect((await logout(form(token))).status).toBe(200);
    expect(await secretStatus(older)).toEqual({ status: 401, reason: 'token_revoked' });
  });

  it('spends one watermark per logout: the user, whose every token the session is among', async () => {
    const { store } = gate.service.revocation!;
    const before = store.size;
    const inSession = await mintToken({ claims: { sub: 'ezra', sid: 's-5' }, now: seconds() - 5 });
    const otherSession = await mintToken({
      claims: { sub: 'ezra', sid: 's-6' },
      now: seconds() - 5,
    });
    const token = await mintLogoutToken({ claims: { sub: 'ezra', sid: 's-5' } });
    expect((await logout(form(token))).status).toBe(200);
    expect(store.size).toBe(before + 1);
    expect(await secretStatus(inSession)).toEqual({ status: 401, reason: 'token_revoked' });
    expect(await secretStatus(otherSession)).toEqual({ status: 401, reason: 'token_revoked' });
  });

  it('revokes by session id alone, for tokens that carry that sid', async () => {
    const inSession = await mintToken({ claims: { sub: 'dave', sid: 's-1' }, now: seconds() - 5 });
    const otherSession = await mintToken({
      claims: { sub: 'dave', sid: 's-2' },
      now: seconds() - 5,
    });
    const token = await mintLogoutToken({ claims: { sub: undefined, sid: 's-1' } });
    expect((await logout(form(token))).status).toBe(200);
    expect((await secretStatus(inSession)).reason).toBe('token_revoked');
    expect((await secretStatus(otherSession)).status).toBe(204);
  });

  it('counts a sid-only logout of an issuer whose access tokens carry no sid, and warns once', async () => {
    for (const sid of ['s-7', 's-8'])
      expect(
        (await logout(form(await mintLogoutToken({ claims: { sub: undefined, sid } })))).status,
      ).toBe(200);
    expect(await gate.service.metrics.render()).toMatch(
      /verifier_revocations_refused_total\{channel="backchannel_logout",reason="sid_unmatched"\} [2-9]/,
    );
    expect(gate.lines.filter((line) => line.includes('name only a session'))).toHaveLength(1);
  });

  it('counts no sid-only logout of a Keycloak issuer, whose access tokens carry the sid', async () => {
    const keycloak = buildService(
      {},
      {
        file: {
          issuers: [{ ...logoutIssuer(jwks.url), preset: 'keycloak', requireClaims: [] }],
          policies: { secret: { issuers: [ISSUER] } },
        },
      },
    );
    await keycloak.service.start();
    const token = await mintLogoutToken({ claims: { sub: undefined, sid: 's-9' } });
    expect((await logout(form(token), undefined, keycloak)).status).toBe(200);
    expect(await keycloak.service.metrics.render()).not.toMatch(/sid_unmatched/);
    await keycloak.service.stop(0);
  });
});

describe('an invalid logout token gets 400 and changes nothing', () => {
  const victim = 'erin';
  const base = { sub: victim };
  const variants: Array<[string, () => Promise<string>, RegExp]> = [
    [
      'a bad signature',
      () =>
        mintLogoutToken({
          key: 'attacker',
          header: { kid: PRIVATE_JWKS.rsaA.kid },
          claims: base,
        }),
      /key|signature/,
    ],
    [
      'another issuer',
      () => mintLogoutToken({ claims: { ...base, iss: 'https://other.test' } }),
      /"iss"/,
    ],
    [
      'an unknown issuer',
      () => mintLogoutToken({ claims: { ...base, iss: 'https://evil.test' } }),
      /"iss"/,
    ],
    [
      'another audience',
      () => mintLogoutToken({ claims: { ...base, aud: 'partner-app' } }),
      /"aud"/,
    ],
    ['the wrong typ', () => mintLogoutToken({ claims: base, header: { typ: 'at+jwt' } }), /"typ"/],
    [
      'an access token typed JWT (no events)',
      () =>
        mintLogoutToken({
          claims: { ...base, events: undefined, exp: undefined, scope: 'secrets:read' },
          header: { typ: 'JWT' },
        }),
      /"events"/,
    ],
    [
      'an ID token typed JWT (nonce, no events)',
      () =>
        mintLogoutToken({
          claims: { ...base, events: undefined, nonce: 'n-1' },
          header: { typ: 'JWT' },
        }),
      /"events"/,
    ],
    [
      'a logout token typed JWT with a nonce',
      () =>
        mintLogoutToken({
          claims: { ...base, exp: undefined, nonce: 'n-1' },
          header: { typ: 'JWT' },
        }),
      /"nonce"/,
    ],
    [
      'a logout token typed JWT without exp and an old iat',
      () =>
        mintLogoutToken({
          claims: { ...base, exp: undefined },
          header: { typ: 'JWT' },
          now: seconds() - 3600,
        }),
      /"iat"/,
    ],
    [
      'no back-channel-logout member in events',
      () => mintLogoutToken({ claims: { ...base, events: { 'urn:other': {} } } }),
      /"events"/,
    ],
    [
      'events missing',
      () => mintLogoutToken({ claims: { ...base, events: undefined } }),
      /"events"/,
    ],
    ['a nonce', () => mintLogoutToken({ claims: { ...base, nonce: 'n-1' } }), /"nonce"/],
    [
      'neither sub nor sid',
      () => mintLogoutToken({ claims: { sub: undefined } }),
      /"sub" or "sid"/,
    ],
    [
      'an old iat',
      () => mintLogoutToken({ claims: { ...base, exp: seconds() + 60 }, now: seconds() - 3600 }),
      /"iat"/,
    ],
    ['no jti', () => mintLogoutToken({ claims: { ...base, jti: undefined } }), /"jti"/],
    [
      'a crit extension it does not understand',
      async () => {
        const minted = await mintLogoutToken({ claims: base });
        const claims = JSON.parse(
          Buffer.from(minted.split('.')[1]!, 'base64url').toString(),
        ) as Record<string, unknown>;
        const header = { alg: 'RS256', kid: PRIVATE_JWKS.rsaA.kid, typ: 'logout+jwt' };
        return signRs256({ ...header, crit: ['urn:example:x'], 'urn:example:x': 1 }, claims);
      },
      /"crit" names an extension that is not understood/,
    ],
  ];
  for (const [name, make, description] of variants) {
    it(name, async () => {
      const token = await make();
      const held = await mintToken({ claims: { sub: victim }, now: seconds() - 10 });
      const before = gate.service.revocation!.store.size;
      const answer = await logout(form(token));
      expect(answer.status).toBe(400);
      expect(answer.headers).toContainEqual(['Cache-Control', 'no-store']);
      // The code only: why it was refused is the log's (one line a second per reason).
      expect(JSON.parse(answer.body)).toEqual({ error: 'invalid_request' });
      expect(description.test(answer.body)).toBe(false);
      expect(gate.service.revocation!.store.size).toBe(before);
      expect((await secretStatus(held)).status).toBe(204);
    });
  }

  it('a replayed jti', async () => {
    const first = await mintLogoutToken({
      claims: { sub: 'frank', jti: 'once' },
      now: seconds() - 30,
    });
    expect((await logout(form(first))).status).toBe(200);
    const newer = await mintToken({ claims: { sub: 'frank' } });
    // Same jti, newer iat, another subject: applying it would revoke tokens the first one spared.
    const replay = await mintLogoutToken({ claims: { sub: victim, jti: 'once' } });
    const held = await mintToken({ claims: { sub: victim }, now: seconds() - 10 });
    const before = gate.service.revocation!.store.size;
    const answer = await logout(form(replay));
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body)).toEqual({ error: 'invalid_request' });
    const logged = gate.lines.filter((line) => line.includes('revocation refused'));
    expect(logged.some((line) => line.includes('\\"jti\\" was seen before'))).toBe(true);
    expect(gate.service.revocation!.store.size).toBe(before);
    expect((await secretStatus(held)).status).toBe(204);
    expect((await secretStatus(newer)).status).toBe(204);
  });

  it('a body that is not one form-encoded logout_token', async () => {
    const token = await mintLogoutToken();
    expect((await logout(token, 'application/jwt')).status).toBe(400);
    expect((await logout(`${form(token)}&${form(token)}`)).status).toBe(400);
    expect((await logout('logout_token=not.a.jwt')).status).toBe(400);
  });

  it('reads the form as a form: an encoded field name or token is decoded, a second field refused', async () => {
    const encoded = (sub: string) =>
      mintLogoutToken({ claims: { sub } }).then(
        (token) => `logout%5Ftoken=${token.replaceAll('.', '%2E')}`,
      );
    expect((await logout(await encoded('ivy'))).status).toBe(200);
    const token = await mintLogoutToken({ claims: { sub: 'jack' } });
    expect((await logout(`${form(token)}&logout_token=x`)).status).toBe(400);
    expect((await logout(`${form(token)}&state=1`)).status).toBe(200);
  });
});

describe('refusals in the log', () => {
  it('logs at most one line a second per reason, then says how many it left out', async () => {
    const count = () =>
      gate.lines.filter(
        (line) => line.includes('revocation refused') && line.includes('nonce_present'),
      ).length;
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const before = count();
    for (let i = 0; i < 5; i++)
      expect((await logout(form(await mintLogoutToken({ claims: { nonce: 'n' } })))).status).toBe(
        400,
      );
    expect(count()).toBe(before + 1);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    await logout(form(await mintLogoutToken({ claims: { nonce: 'n' } })));
    expect(count()).toBe(before + 2);
    expect(
      JSON.parse(gate.lines.findLast((line) => line.includes('nonce_present'))!),
    ).toMatchObject({
      suppressed: 4,
    });
  });
});

describe('the budget of failed signature checks per sender key', () => {
  const budgeted = async () => {
    const limited = buildService(
      { VERIFIER_REVOCATION_RECEIVER_RATE: '1r/m', VERIFIER_REVOCATION_RECEIVER_BURST: '2' },
      { file: { issuers: [logoutIssuer(jwks.url)], policies: { secret: { issuers: [ISSUER] } } } },
    );
    await limited.service.start();
    const receive = limited.service.routes.receivers.get('/backchannel-logout')!;
    // Every push from the address the IdP itself pushes from.
    const push = (body: string) =>
      receive({ contentType: 'application/x-www-form-urlencoded', body, clientKey: '127.0.0.1' });
    return { limited, push };
  };
  // Under the IdP's `iss` and `kid`, signed by another key: each costs a signature check.
  const forge = () =>
    mintLogoutToken({
      key: 'attacker',
      header: { kid: PRIVATE_JWKS.rsaA.kid },
      claims: { sub: 'x' },
    });

  it('answers forgeries past the budget 429 + Retry-After, and still applies every real logout from the same address', async () => {
    const { limited, push } = await budgeted();
    const statuses = [];
    for (let i = 0; i < 10; i++) statuses.push((await push(form(await forge()))).status);
    expect(statuses).toEqual([400, 400, 400, ...Array(7).fill(429)]);
    const over = await push(form(await forge()));
    expect(over.headers).toContainEqual(['Retry-After', '60']);
    expect(over.headers).toContainEqual(['Cache-Control', 'no-store']);
    expect(JSON.parse(over.body)).toEqual({ error: 'too_many_requests' });
    // The key's budget is spent, yet a logout the IdP signed is verified and applied.
    const older = await mintToken({ claims: { sub: 'ivy' }, now: seconds() - 10 });
    expect(await statusOfSecret(limited, older)).toBe(204);
    for (const sub of ['ivy', 'real-2', 'real-3'])
      expect((await push(form(await mintLogoutToken({ claims: { sub } })))).status).toBe(200);
    expect(await statusOfSecret(limited, older)).toBe(401);
    const text = await limited.service.metrics.render();
    expect(text).toMatch(
      /verifier_revocations_refused_total\{channel="backchannel_logout",reason="rate_limited"\} 8\n/,
    );
    expect(text).toMatch(
      /verifier_revocations_applied_total\{channel="backchannel_logout",event="backchannel-logout"\} 3\n/,
    );
    // One warning line for the whole flood, and never the token.
    expect(
      limited.lines.filter((line) => line.includes('budget of failed signature')),
    ).toHaveLength(1);
    await limited.service.stop(0);
  });

  it('is spent by nothing refused before the signature: garbage, other issuers, typ, alg, kid, spelling', async () => {
    const { limited, push } = await budgeted();
    const real = await mintLogoutToken();
    const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const junk = [
      'logout_token=x.y.z',
      'nothing=here',
      form('a'.repeat(9000)),
      form(await mintLogoutToken({ claims: { iss: 'https://evil.test' } })),
      form(await mintLogoutToken({ header: { typ: 'at+jwt' } })),
      form(`${b64({ alg: 'HS256', kid: PRIVATE_JWKS.rsaA.kid })}.${b64({ iss: ISSUER })}.c2ln`),
      form(await mintLogoutToken({ header: { kid: 'no-such-key' } })),
      // The real token with its last character's unused bits set: not the one spelling.
      form(`${real.slice(0, -1)}${String.fromCharCode(real.charCodeAt(real.length - 1) ^ 1)}`),
    ];
    for (let i = 0; i < 40; i++) expect((await push(junk[i % junk.length]!)).status).toBe(400);
    // The whole budget is left: three forgeries get their 400, the fourth its 429.
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await push(form(await forge()))).status);
    expect(statuses).toEqual([400, 400, 400, 429]);
    await limited.service.stop(0);
  });

  it('keeps one budget per key: forgeries under one key leave another key of the issuer its own', async () => {
    const twoKeys = await startJwksServer(['rsaA', 'rsaB']);
    const limited = buildService(
      { VERIFIER_REVOCATION_RECEIVER_RATE: '1r/m', VERIFIER_REVOCATION_RECEIVER_BURST: '2' },
      {
        file: {
          issuers: [logoutIssuer(twoKeys.url)],
          policies: { secret: { issuers: [ISSUER] } },
        },
      },
    );
    await limited.service.start();
    const receive = limited.service.routes.receivers.get('/backchannel-logout')!;
    const push = async (kid: string) =>
      (
        await receive({
          contentType: 'application/x-www-form-urlencoded',
          body: form(await mintLogoutToken({ key: 'attacker', header: { kid } })),
        })
      ).status;
    const underA = [];
    for (let i = 0; i < 5; i++) underA.push(await push(PRIVATE_JWKS.rsaA.kid));
    expect(underA).toEqual([400, 400, 400, 429, 429]);
    expect(await push(PRIVATE_JWKS.rsaB.kid)).toBe(400);
    await limited.service.stop(0);
    await twoKeys.close();
  });
});

async function statusOfSecret(at: TestService, token: string): Promise<number> {
  return statusOf(
    await at.service.authorize({ policy: 'secret', authorization: `Bearer ${token}` }),
  );
}

describe('the receiver', () => {
  it('warns at start that the in-memory store holds revocations for one replica only', () => {
    expect(gate.lines.filter((line) => line.includes('in-memory store'))).toHaveLength(1);
  });

  it('is off unless an issuer lists logout audiences', () => {
    const plain = buildService({
      VERIFIER_ISSUER: ISSUER,
      VERIFIER_AUDIENCE: AUDIENCE,
      VERIFIER_JWKS_URI: jwks.url,
    });
    expect(plain.service.routes.receivers.size).toBe(0);
    expect(plain.service.revocation).toBeUndefined();
  });

  it('bounds the edge reuse by the revocation latency (NGINX rounds up a second)', async () => {
    const token = await mintToken({ claims: { sub: 'gina' } });
    const decision = await gate.service.authorize({
      policy: 'secret',
      authorization: `Bearer ${token}`,
    });
    expect(decision.edgeTtl).toBe(5);
    const tight = buildService(
      { VERIFIER_REVOCATION_MAX_LATENCY: '3s', VERIFIER_EDGE_CACHE_TTL: '5s' },
      {
        file: {
          issuers: [logoutIssuer(jwks.url)],
          policies: { secret: { issuers: [ISSUER] } },
        },
      },
    );
    await tight.service.start();
    const tightDecision = await tight.service.authorize({
      policy: 'secret',
      authorization: `Bearer ${token}`,
    });
    expect(tightDecision.edgeTtl).toBe(2);
    await tight.service.stop(0);
  });

  it('answers junk at once, with no promise to wait for: nothing of it waits for a key or the store', async () => {
    // A made-up `kid` once (its refetch done, the next within the cooldown asks nothing), then a
    // real logout, so the IdP's key is held again after that refetch.
    const madeUp = form(await mintLogoutToken({ key: 'attacker', header: { kid: 'made-up' } }));
    await logout(madeUp);
    expect((await logout(form(await mintLogoutToken({ claims: { sub: 'kim' } })))).status).toBe(
      200,
    );
    const junk = [
      'logout_token=eyJhbGciOiJSUzI1NiJ9.bm90IGpzb24.c2ln',
      form(
        await mintLogoutToken({ claims: { iss: 'https://idp.attacker.test' }, key: 'attacker' }),
      ),
      madeUp,
      form(await mintLogoutToken({ key: 'attacker', header: { kid: PRIVATE_JWKS.rsaA.kid } })),
    ];
    for (const body of junk) {
      const answer = logout(body);
      expect(answer, body.slice(0, 40)).not.toBeInstanceOf(Promise);
      expect(await answer).toMatchObject({ status: 400, body: '{"error":"invalid_request"}' });
    }
  });

  it('counts received, applied and refused logout tokens', async () => {
    await logout(form(await mintLogoutToken({ claims: { sub: 'hank' } })));
    await logout(form(await mintLogoutToken({ claims: { sub: 'hank', nonce: 'x' } })));
    const text = await gate.service.metrics.render();
    expect(text).toMatch(/verifier_revocations_received_total\{channel="backchannel_logout"\} \d+/);
    expect(text).toMatch(
      /verifier_revocations_applied_total\{channel="backchannel_logout",event="backchannel-logout"\} [1-9]/,
    );
    expect(text).toMatch(
      /verifier_revocations_refused_total\{channel="backchannel_logout",reason="nonce_present"\} [1-9]/,
    );
    expect(LOGOUT_EVENT).toMatch(/backchannel-logout$/);
  });
});
