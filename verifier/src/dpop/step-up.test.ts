// Step-up (RFC 9470) for DPoP clients: the challenge follows the DPoP rules (RFC 9449 §7.1), so a
// DPoP request is asked in the DPoP scheme, and only once its proof holds.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Decision } from '../decision/decision.js';
import { createRenderer } from '../http/verify-answer.js';
import { answerOf } from '../testing/answer.js';
import { signProof, thumbprintOf } from '../testing/dpop-proof.js';
import {
  AUDIENCE,
  ISSUER,
  manualClock,
  mintToken,
  startJwksServer,
  type JwksServer,
} from '../testing/fixtures.js';
import { buildService, type TestService } from '../testing/service.js';

const clock = manualClock();
const T = clock.seconds();
const ORIGIN = 'https://gate.example.com';
const MFA = 'urn:secret-gate:mfa';
const ALGS = 'ES256 ES384 PS256 RS256 EdDSA';
const LEVEL = 'A different authentication level is required';
let jwks: JwksServer;
let built: TestService;
let jkt: string;

beforeAll(async () => {
  jwks = await startJwksServer(['rsaA']);
  jkt = await thumbprintOf('ec');
  const issuers = [
    { issuer: ISSUER, audience: AUDIENCE, jwksUri: jwks.url, algorithms: ['RS256'] },
  ];
  const secret = { issuers: [ISSUER], dpop: 'allowed', acrValues: [MFA], maxAge: 300 };
  built = buildService({}, { now: clock.now, file: { issuers, policies: { secret } } });
  await built.service.start();
});
afterAll(async () => {
  await built.service.stop(0);
  await jwks.close();
});

async function ask(scheme: 'Bearer' | 'DPoP', token: string, proof?: string): Promise<Decision> {
  return built.service.authorize({
    policy: 'secret',
    authorization: `${scheme} ${token}`,
    dpop: proof,
    originalMethod: 'GET',
    originalUri: '/secret',
    originalOrigin: ORIGIN,
  });
}
const proofFor = (token: string) =>
  signProof({ htu: `${ORIGIN}/secret`, accessToken: token, iat: T });
const challenge = (decision: Decision) =>
  answerOf(decision).headers.find(([name]) => name === 'WWW-Authenticate')?.[1];

describe('step-up for DPoP requests', () => {
  it('asks a DPoP client for a new sign-in in the DPoP scheme once its proof holds', async () => {
    const token = await mintToken({
      now: T,
      claims: { cnf: { jkt }, acr: 'urn:pwd', auth_time: T },
    });
    const decision = await ask('DPoP', token, await proofFor(token));
    expect(decision.reason).toBe('insufficient_user_authentication');
    expect(answerOf(decision).status).toBe(401);
    expect(challenge(decision)).toBe(
      `DPoP error="insufficient_user_authentication", error_description="${LEVEL}", acr_values="${MFA}", max_age="300", algs="${ALGS}"`,
    );
    // Every challenge names the metadata when it is configured, the DPoP one included.
    const render = createRenderer({
      resourceMetadata: `${ORIGIN}/.well-known/oauth-protected-resource`,
    });
    expect(render(decision).headers[0]?.[1]).toBe(
      `DPoP error="insufficient_user_authentication", error_description="${LEVEL}", acr_values="${MFA}", max_age="300", algs="${ALGS}", resource_metadata="${ORIGIN}/.well-known/oauth-protected-resource"`,
    );
  });

  it('says nothing of step-up to a DPoP request whose proof does not hold', async () => {
    const token = await mintToken({ now: T, claims: { cnf: { jkt } } });
    const decision = await ask('DPoP', token);
    expect(decision.reason).toBe('dpop_proof_missing');
    expect(challenge(decision)).not.toContain('insufficient_user_authentication');
  });

  it('allows a DPoP request whose token meets the requirements', async () => {
    const token = await mintToken({
      now: T,
      claims: { cnf: { jkt }, acr: MFA, auth_time: T - 10 },
    });
    expect((await ask('DPoP', token, await proofFor(token))).reason).toBe('allowed');
  });

  it('asks a bearer client of the same policy in the Bearer scheme', async () => {
    const token = await mintToken({ now: T, claims: { acr: MFA, auth_time: T - 3600 } });
    expect(challenge(await ask('Bearer', token))).toBe(
      `Bearer realm="secret-gate", error="insufficient_user_authentication", error_description="More recent authentication is required", acr_values="${MFA}", max_age="300"`,
    );
  });
});
