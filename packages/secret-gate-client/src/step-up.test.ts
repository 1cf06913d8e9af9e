import type { WWWAuthenticateChallenge } from 'oauth4webapi';
import { describe, expect, it } from 'vitest';
import { readScopeChallenge, readStepUpChallenge } from './step-up.js';

const MFA = 'urn:secret-gate:mfa';

function challenge(scheme: string, parameters: Record<string, string>): WWWAuthenticateChallenge {
  return { scheme: scheme as Lowercase<string>, parameters };
}

describe('readStepUpChallenge', () => {
  it('reads acr_values and max_age from a Bearer insufficient_user_authentication challenge', () => {
    expect(
      readStepUpChallenge([
        challenge('bearer', {
          realm: 'secret-gate',
          error: 'insufficient_user_authentication',
          acr_values: `${MFA} urn:secret-gate:hwk`,
          max_age: '300',
        }),
      ]),
    ).toEqual({
      reason: 'insufficient_user_authentication',
      acrValues: [MFA, 'urn:secret-gate:hwk'],
      maxAge: 300,
    });
  });

  it('reads the DPoP scheme the same way, and either parameter alone', () => {
    const error = 'insufficient_user_authentication';
    expect(readStepUpChallenge([challenge('dpop', { error, max_age: '0' })])).toEqual({
      reason: error,
      maxAge: 0,
    });
    expect(readStepUpChallenge([challenge('bearer', { error, acr_values: MFA })])).toEqual({
      reason: error,
      acrValues: [MFA],
    });
  });

  it.each([
    ['another error', [challenge('bearer', { error: 'invalid_token' })]],
    ['another scheme', [challenge('basic', { error: 'insufficient_user_authentication' })]],
    ['no challenge', undefined],
  ])('is undefined for %s', (_case, challenges) => {
    expect(readStepUpChallenge(challenges)).toBeUndefined();
  });

  it.each([['-1'], ['5m'], ['1.5'], ['']])('leaves out the malformed max_age %j', (maxAge) => {
    expect(
      readStepUpChallenge([
        challenge('bearer', { error: 'insufficient_user_authentication', max_age: maxAge }),
      ]),
    ).toEqual({ reason: 'insufficient_user_authentication' });
  });
});

describe('readScopeChallenge', () => {
  const error = 'insufficient_scope';

  it('reads the scopes of a Bearer or DPoP insufficient_scope challenge', () => {
    expect(
      readScopeChallenge([
        challenge('bearer', { realm: 'secret-gate', error, scope: 'secrets:read  payments' }),
      ]),
    ).toEqual({ reason: error, scopes: ['secrets:read', 'payments'] });
    expect(readScopeChallenge([challenge('dpop', { error, scope: 'payments' })])).toEqual({
      reason: error,
      scopes: ['payments'],
    });
  });

  it('skips a challenge of another error for the insufficient_scope one', () => {
    expect(
      readScopeChallenge([
        challenge('bearer', { error: 'invalid_token', scope: 'other' }),
        challenge('dpop', { error, scope: 'payments' }),
      ]),
    ).toEqual({ reason: error, scopes: ['payments'] });
  });

  it.each([
    ['no scope parameter', [challenge('bearer', { error })]],
    ['an empty scope', [challenge('bearer', { error, scope: ' ' })]],
    ['another error', [challenge('bearer', { error: 'invalid_token', scope: 'payments' })]],
    ['another scheme', [challenge('basic', { error, scope: 'payments' })]],
    ['no challenge', undefined],
  ])('is undefined for %s: nothing a new sign-in could ask for', (_case, challenges) => {
    expect(readScopeChallenge(challenges)).toBeUndefined();
  });
});
