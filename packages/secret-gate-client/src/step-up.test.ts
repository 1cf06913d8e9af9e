import type { WWWAuthenticateChallenge } from 'oauth4webapi';
import { describe, expect, it } from 'vitest';
import { readStepUpChallenge } from './step-up.js';

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
    ).toEqual({ acrValues: [MFA, 'urn:secret-gate:hwk'], maxAge: 300 });
  });

  it('reads the DPoP scheme the same way, and either parameter alone', () => {
    const error = 'insufficient_user_authentication';
    expect(readStepUpChallenge([challenge('dpop', { error, max_age: '0' })])).toEqual({
      maxAge: 0,
    });
    expect(readStepUpChallenge([challenge('bearer', { error, acr_values: MFA })])).toEqual({
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
    ).toEqual({});
  });
});
