import { describe, expect, it } from 'vitest';
import type { PolicyConfig } from '../config/model.js';
import { VerifyError } from '../errors.js';
import type { Authentication, VerifiedToken } from '../token/verified-token.js';
import { createRenderer, renderDecision } from '../http/verify-answer.js';
import { deny as denied } from './decision.js';
import { DIFFERENT_LEVEL, MORE_RECENT } from '../refusals.js';
import {
  authenticatedUntil,
  checkAuthentication,
  stepUpChallenge,
  type AuthenticationRequirement,
} from './step-up.js';

const NOW = 1_800_000_000;
const MFA = 'urn:secret-gate:mfa';
const PWD = 'urn:secret-gate:pwd';

const token = (authentication?: Partial<Authentication>): VerifiedToken => ({
  identity: { sub: 'user-1', client: 'spa-demo', scopes: ['secrets:read'], issuer: 'https://idp' },
  exp: NOW + 300,
  authentication: authentication && {
    acr: [],
    amr: [],
    authTime: undefined,
    tolerance: 30,
    ...authentication,
  },
});
const policy = (requirement: AuthenticationRequirement): PolicyConfig => ({
  name: 'payments',
  issuers: ['https://idp'],
  scopes: [],
  clients: undefined,
  cloudfront: undefined,
  dpop: 'off',
  revocation: 'checked',
  ...requirement,
});
const refusal = (run: () => void): string | undefined => {
  try {
    run();
    return undefined;
  } catch (error) {
    expect(error).toBeInstanceOf(VerifyError);
    expect((error as VerifyError).code).toBe('insufficient_user_authentication');
    return (error as VerifyError).message;
  }
};

describe('checkAuthentication (RFC 9470 requirements against a token)', () => {
  const acr = { acrValues: [MFA, 'urn:secret-gate:hwk'] };
  const age = { maxAge: 300 };
  const amr = { amrValues: ['mfa', 'otp'] };
  // [what, requirement, token claims, refusal message or undefined for "met"]
  const rows: Array<
    [string, AuthenticationRequirement, Partial<Authentication> | undefined, string | undefined]
  > = [
    ['no requirement, no claims', {}, undefined, undefined],
    ['an accepted acr', acr, { acr: [MFA] }, undefined],
    ['the second accepted acr', acr, { acr: ['urn:secret-gate:hwk'] }, undefined],
    [
      'an acr not accepted',
      acr,
      { acr: [PWD] },
      '"acr" claim is none of the policy\'s "acrValues"',
    ],
    ['no acr', acr, {}, '"acr" claim is missing'],
    ['no claims read at all', acr, undefined, '"acr" claim is missing'],
    [
      'Entra acrs with one accepted context',
      { acrValues: ['c1'] },
      { acr: ['c2', 'c1'] },
      undefined,
    ],
    ['a fresh sign-in', age, { authTime: NOW - 10 }, undefined],
    ['a sign-in exactly maxAge + tolerance ago', age, { authTime: NOW - 330 }, undefined],
    [
      'a stale sign-in',
      age,
      { authTime: NOW - 331 },
      '"auth_time" claim is older than the policy\'s "maxAge"',
    ],
    ['no auth_time', age, { acr: [MFA] }, '"auth_time" claim is missing'],
    [
      'an auth_time in the future',
      age,
      { authTime: NOW + 1 },
      '"auth_time" claim is in the future',
    ],
    [
      'an auth_time within the tolerance ahead (none on that side)',
      age,
      { authTime: NOW + 25 },
      '"auth_time" claim is in the future',
    ],
    ['an auth_time of this very second', age, { authTime: NOW }, undefined],
    ['every amr required', amr, { amr: ['pwd', 'otp', 'mfa'] }, undefined],
    ['an amr missing', amr, { amr: ['pwd', 'mfa'] }, '"amr" claim lacks otp'],
    ['neither claim for both', { ...acr, ...age }, {}, '"acr" claim is missing'],
    [
      'acr met, sign-in stale',
      { ...acr, ...age },
      { acr: [MFA], authTime: NOW - 1000 },
      '"auth_time" claim is older than the policy\'s "maxAge"',
    ],
    [
      'both met',
      { ...acr, ...age, ...amr },
      { acr: [MFA], amr: ['mfa', 'otp'], authTime: NOW - 5 },
      undefined,
    ],
  ];
  it.each(rows)('%s', (_, requirement, claims, message) => {
    expect(refusal(() => checkAuthentication(token(claims), requirement, NOW))).toBe(message);
  });
});

describe('stepUpChallenge (what the 401 asks a new sign-in for)', () => {
  it('names the level for a wrong acr, and every requirement to ask for', () => {
    const requirement = { acrValues: [MFA], maxAge: 300 };
    const claims = { acr: [PWD], authTime: NOW };
    expect(refusal(() => checkAuthentication(token(claims), requirement, NOW))).toBe(
      '"acr" claim is none of the policy\'s "acrValues"',
    );
    expect(stepUpChallenge(token(claims), policy(requirement))).toEqual({
      description: DIFFERENT_LEVEL,
      acrValues: [MFA],
      maxAge: 300,
    });
  });

  it('names the recency for a stale sign-in', () => {
    expect(stepUpChallenge(token({ authTime: NOW - 900 }), policy({ maxAge: 300 }))).toEqual({
      description: MORE_RECENT,
      acrValues: undefined,
      maxAge: 300,
    });
  });

  it('bounds an allow by auth_time + maxAge, and not at all without maxAge', () => {
    expect(authenticatedUntil(token({ authTime: NOW - 100 }), { maxAge: 300 })).toBe(NOW + 200);
    expect(authenticatedUntil(token({ authTime: NOW }), {})).toBe(Infinity);
    expect(authenticatedUntil(token(), { maxAge: 300 })).toBe(-Infinity);
  });
});

describe('the RFC 9470 challenge, byte for byte', () => {
  const deny = (requirement: AuthenticationRequirement, claims: Partial<Authentication>) => ({
    ...denied('insufficient_user_authentication', token(claims).identity),
    stepUp: stepUpChallenge(token(claims), policy(requirement)),
  });

  it('writes acr_values and max_age after the description, never stored at the edge', () => {
    const answer = renderDecision(deny({ acrValues: [MFA, 'urn:x'], maxAge: 300 }, {}));
    expect(answer).toEqual({
      status: 401,
      headers: [
        [
          'WWW-Authenticate',
          `Bearer realm="secret-gate", error="insufficient_user_authentication", error_description="A different authentication level is required", acr_values="${MFA} urn:x", max_age="300"`,
        ],
        ['X-Accel-Expires', '0'],
        ['X-Auth-Reason', 'insufficient_user_authentication'],
      ],
    });
  });

  it('writes max_age alone for a policy with only maxAge, and resource_metadata last', () => {
    const render = createRenderer({
      resourceMetadata: 'https://gate.example/.well-known/oauth-protected-resource',
    });
    expect(render(deny({ maxAge: 60 }, { authTime: NOW - 600 })).headers[0]).toEqual([
      'WWW-Authenticate',
      'Bearer realm="secret-gate", error="insufficient_user_authentication", error_description="More recent authentication is required", max_age="60", resource_metadata="https://gate.example/.well-known/oauth-protected-resource"',
    ]);
  });
});
