import { describe, expect, it } from 'vitest';
import { describeStepUp, stepUpParameters, stepUpScope } from './step-up.js';

const MFA = 'urn:secret-gate:mfa';
const reason = 'insufficient_user_authentication';

describe('stepUpParameters', () => {
  const NOW = 1_750_000_000;

  it.each([
    // request, authTime, expected parameters
    [{ acrValues: [MFA] }, NOW - 10, { acr_values: MFA }],
    [{ maxAge: 300 }, NOW - 10, { max_age: '300' }],
    [{ maxAge: 300 }, NOW - 300, { max_age: '300', prompt: 'login' }],
    [{ maxAge: 300 }, undefined, { max_age: '300', prompt: 'login' }],
    [{ maxAge: 0 }, NOW, { max_age: '0', prompt: 'login' }],
    [
      { acrValues: [MFA, 'b'], maxAge: 60 },
      NOW - 3600,
      { acr_values: `${MFA} b`, max_age: '60', prompt: 'login' },
    ],
  ] as const)('asks %j of a sign-in made at %s with %j', (request, authTime, expected) => {
    expect(stepUpParameters({ reason, ...request }, authTime, NOW)).toEqual(expected);
  });
});

describe('describeStepUp', () => {
  it.each([
    [{ acrValues: [MFA] }, `a sign-in at level "${MFA}"`],
    [{ acrValues: ['a', 'b'] }, 'a sign-in at level "a" or "b"'],
    [{ maxAge: 0 }, 'a sign-in made just now'],
    [{ maxAge: 90 }, 'a sign-in from the last 90 seconds'],
    [{ maxAge: 900 }, 'a sign-in from the last 15 minutes'],
    [{ maxAge: 86_400 }, 'a sign-in from the last 24 hours'],
    [
      { acrValues: [MFA], maxAge: 300 },
      `a sign-in at level "${MFA}" and a sign-in from the last 5 minutes`,
    ],
    [{}, 'a stronger sign-in'],
    [{ scopes: ['payments'] }, 'a sign-in that grants "payments"'],
    [{ scopes: ['a', 'b'] }, 'a sign-in that grants "a" and "b"'],
  ])('words %j as %j', (request, words) => {
    expect(describeStepUp({ reason, ...request })).toBe(words);
  });
});

describe('stepUpScope', () => {
  const scopeStepUp = (scopes: string[]) => ({ reason: 'insufficient_scope' as const, scopes });

  it('adds the scopes the challenge names to the base scopes, keeping those', () => {
    expect(stepUpScope('openid secrets:read', scopeStepUp(['payments']))).toBe(
      'openid secrets:read payments',
    );
  });

  it('asks for a scope once when the base scopes already hold it', () => {
    expect(stepUpScope('openid  secrets:read', scopeStepUp(['secrets:read', 'payments']))).toBe(
      'openid secrets:read payments',
    );
  });

  it('keeps the base scopes for an RFC 9470 step-up', () => {
    expect(stepUpScope('openid secrets:read', { reason, acrValues: [MFA] })).toBe(
      'openid secrets:read',
    );
  });

  it('adds no scope parameter of its own to the OpenID Connect ones', () => {
    expect(stepUpParameters(scopeStepUp(['payments']), undefined, 0)).toEqual({});
  });
});
