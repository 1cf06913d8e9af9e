// The gate's decision on generated requests (an RFC 9068 access token, with an RFC 9449 DPoP proof
// for about half) against two independent oracles, jose and oauth4webapi: 0 disagreements beyond
// the named known differences. `npm run oracles -- --cases 1000000` runs the same at full size.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildCase, NOW, type CaseSpec } from './cases.js';
import { ORACLES, runDifferential } from './differential.js';
import { startDeciders, type Deciders } from './oracles.js';

const CASES = 3_000;

describe('the gate against jose and oauth4webapi on generated requests', () => {
  it(`agrees with both oracles on ${CASES} cases, except the known differences`, async () => {
    const summary = await runDifferential({ cases: CASES, seed: 38_5 });
    const shown = summary.disagreements
      .slice(0, 5)
      .map(
        (d) => `${d.oracle}: gate ${d.gate}, oracle ${d.oracleAllowed}: ${d.mutations.join(' ')}`,
      );
    expect(shown).toEqual([]);
    expect(summary.disagreementCount).toBe(0);
    // The generator reaches both outcomes and both token kinds, and the oracles mostly agree
    // outright: a decider that refused everything would not pass this.
    expect(summary.cases).toBe(CASES);
    expect(summary.allowed / CASES).toBeGreaterThan(0.3);
    expect(summary.allowed / CASES).toBeLessThan(0.8);
    expect(summary.dpopCases / CASES).toBeGreaterThan(0.3);
    for (const oracle of ORACLES) expect(summary.agreed[oracle] / CASES).toBeGreaterThan(0.8);
    // 6 s on a quiet 2-core machine, 15 s beside a full CI run: room above the 30 s default.
  }, 120_000);
});

describe('each decider on requests whose answer is known', () => {
  let deciders: Deciders;
  beforeAll(async () => {
    vi.spyOn(Date, 'now').mockReturnValue(NOW * 1000);
    deciders = await startDeciders();
  });
  afterAll(async () => {
    await deciders.close();
    vi.restoreAllMocks();
  });

  const VALID_TOKEN: CaseSpec['token'] = {
    signer: 'ES256',
    alg: 'same',
    kid: 'same',
    typ: 'at+jwt',
    crit: undefined,
    extraHeader: 'none',
    iss: 'https://idp.test',
    aud: 'secret-gate-api',
    exp: 300,
    nbf: undefined,
    iat: 0,
    sub: 'user-1',
    jti: 'at-1',
    clientId: 'client_id',
    scope: 'openid secrets:read',
    refusedClaim: 'none',
    cnf: 'auto',
    scheme: 'auto',
    segments: { mutation: 'none', at: 0 },
  };
  const VALID_PROOF: NonNullable<CaseSpec['proof']> = {
    key: 'EdDSA',
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
  };
  const spec = (
    token: Partial<CaseSpec['token']>,
    proof: Partial<NonNullable<CaseSpec['proof']>> | null = null,
  ): CaseSpec => ({
    method: 'GET',
    token: { ...VALID_TOKEN, ...token },
    proof: proof === null ? null : { ...VALID_PROOF, ...proof },
    dpopHeaderWithoutProof: false,
  });

  it.each([
    ['a valid Bearer token', spec({}), true],
    ['a valid DPoP-bound token with its proof', spec({}, {}), true],
    ['a PS256 token with an RSA proof', spec({ signer: 'PS256' }, { key: 'PS256' }), true],
    ['a flipped signature bit', spec({ segments: { mutation: 'flipSignatureBit', at: 9 } }), false],
    ['an attacker-signed token', spec({ signer: 'attacker' }), false],
    ['alg "none"', spec({ alg: 'none' }), false],
    ['HS256 with the public key', spec({ alg: 'HS256' }), false],
    ['another audience', spec({ aud: 'other' }), false],
    ['an expired token', spec({ exp: -31 }), false],
    ['typ "JWT"', spec({ typ: 'JWT' }), false],
    ['a bound token as Bearer', spec({ scheme: 'Bearer' }, {}), false],
    ['a proof for another URL', spec({}, { htu: 'otherPath' }), false],
    ['a proof by another key', spec({}, { jwk: 'otherKey' }), false],
    ['a proof without "ath"', spec({}, { ath: 'missing' }), false],
    ['a proof 6 minutes old', spec({}, { iat: -360 }), false],
  ] as const)('%s: all three answer %s', async (_name, request, allowed) => {
    const built = buildCase(request, deciders.thumbprints);
    expect(await deciders.gate(built.request)).toBe(allowed);
    expect(await deciders.jose(built.request)).toBe(allowed);
    expect(await deciders.oauth4webapi(built.request)).toBe(allowed);
  });

  // RFC 7515 §4.1.9 makes "application/dpop+jwt" the same `typ` as "dpop+jwt" and media types are
  // case-insensitive; jose, oauth4webapi and the gate take both (a difference this comparison found).
  const applicationTyp = () =>
    buildCase(spec({}, { typ: 'application/dpop+jwt' }), deciders.thumbprints);
  it('both oracles allow a proof typed "application/dpop+jwt"', async () => {
    const { request } = applicationTyp();
    expect(await deciders.jose(request)).toBe(true);
    expect(await deciders.oauth4webapi(request)).toBe(true);
  });
  it('the gate allows a proof typed "application/dpop+jwt" too', async () => {
    expect(await deciders.gate(applicationTyp().request)).toBe(true);
  });
});
