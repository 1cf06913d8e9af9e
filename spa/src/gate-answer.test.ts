import { describe, expect, it } from 'vitest';
import {
  challengeParam,
  describeGateFailure,
  NETWORK_FAILURE,
  parseRetryAfter,
  stepUpFailed,
} from './gate-answer.js';

const NOW = new Date('2025-06-01T12:00:00Z');
const REALM = 'Bearer realm="secret-gate"';

describe('describeGateFailure', () => {
  it.each([
    // status, WWW-Authenticate, Retry-After, code, action, retryAfterSeconds
    [401, `${REALM}, error="invalid_token"`, null, 'session-expired', 'sign-in', undefined],
    [401, null, null, 'session-expired', 'sign-in', undefined],
    [401, REALM, null, 'not-signed-in', 'sign-in', undefined],
    [
      403,
      `${REALM}, error="insufficient_scope", scope="secrets:read"`,
      null,
      'missing-scope',
      'none',
      undefined,
    ],
    [429, null, '30', 'rate-limited', 'retry', 30],
    [429, null, null, 'rate-limited', 'retry', undefined],
    [503, null, '5', 'unavailable', 'retry', 5],
    [503, null, 'Sun, 01 Jun 2025 12:02:00 GMT', 'unavailable', 'retry', 120],
    [500, null, null, 'gate-error', 'retry', undefined],
    [502, null, null, 'gate-error', 'retry', undefined],
    [404, null, null, 'unexpected-status', 'retry', undefined],
  ] as const)(
    'maps HTTP %i (challenge %s, Retry-After %s) to %s with action %s',
    (status, wwwAuthenticate, retryAfter, code, action, retryAfterSeconds) => {
      const notice = describeGateFailure({ status, wwwAuthenticate, retryAfter }, NOW);
      expect(notice.code).toBe(code);
      expect(notice.action).toBe(action);
      expect(notice.retryAfterSeconds).toBe(retryAfterSeconds);
    },
  );

  it('tells an expired session to sign in again', () => {
    const notice = describeGateFailure(
      { status: 401, wwwAuthenticate: `${REALM}, error="invalid_token"` },
      NOW,
    );
    expect(notice.title).toBe('Your session has expired');
    expect(notice.detail).toBe(
      'The gate no longer accepts your sign-in. Sign in again to continue.',
    );
  });

  it('names the missing scope from the challenge', () => {
    const notice = describeGateFailure(
      {
        status: 403,
        wwwAuthenticate: `${REALM}, error="insufficient_scope", scope="secrets:read"`,
      },
      NOW,
    );
    expect(notice.title).toBe('You are not allowed to read the secrets');
    expect(notice.detail).toContain('lacks the permission "secrets:read"');
  });

  it('still explains a 403 that carries no challenge', () => {
    const notice = describeGateFailure({ status: 403 }, NOW);
    expect(notice.detail).toContain('lacks the permission to read the secrets');
  });

  it('asks to slow down and says how long to wait on 429', () => {
    const notice = describeGateFailure({ status: 429, retryAfter: '30' }, NOW);
    expect(notice.title).toBe('Too many requests — slow down');
    expect(notice.detail).toContain('Try again in 30 seconds.');
  });

  it('says the service is unavailable on 503 and rounds long waits to minutes', () => {
    const notice = describeGateFailure({ status: 503, retryAfter: '600' }, NOW);
    expect(notice.title).toBe('The secret service is unavailable');
    expect(notice.detail).toBe(
      'The gate cannot check sign-ins right now. Try again in 10 minutes.',
    );
  });

  it('never includes the body or headers verbatim beyond the scope name', () => {
    const notice = describeGateFailure(
      {
        status: 401,
        wwwAuthenticate: `${REALM}, error="invalid_token", error_description="eyJhbGciOi..."`,
      },
      NOW,
    );
    expect(JSON.stringify(notice)).not.toContain('eyJ');
  });

  it('describes a network failure as unreachable with a retry', () => {
    expect(NETWORK_FAILURE.title).toBe('Could not reach the gate');
    expect(NETWORK_FAILURE.action).toBe('retry');
  });
});

describe('describeGateFailure on a step-up challenge (RFC 9470)', () => {
  const stepUp = {
    scheme: 'bearer' as const,
    parameters: {
      realm: 'secret-gate',
      error: 'insufficient_user_authentication',
      error_description: 'eyJ-like text the gate wrote',
      acr_values: 'urn:secret-gate:mfa',
      max_age: '300',
    },
  };

  it('asks for a step-up naming the level and the age, and carries the request', () => {
    const notice = describeGateFailure({ status: 401, challenges: [stepUp] }, NOW);
    expect(notice).toMatchObject({
      code: 'step-up-required',
      action: 'step-up',
      title: 'These secrets need a stronger sign-in',
      stepUp: { acrValues: ['urn:secret-gate:mfa'], maxAge: 300 },
    });
    expect(notice.detail).toBe(
      'The gate releases them only after a sign-in at level "urn:secret-gate:mfa" and a sign-in from the last 5 minutes. Sign in again to continue; your other secrets stay available.',
    );
    expect(JSON.stringify(notice)).not.toContain('eyJ');
  });

  it('keeps the session-expired answer for an invalid_token challenge beside it', () => {
    const invalid = { scheme: 'bearer' as const, parameters: { error: 'invalid_token' } };
    expect(
      describeGateFailure(
        { status: 401, wwwAuthenticate: `${REALM}, error="invalid_token"`, challenges: [invalid] },
        NOW,
      ).code,
    ).toBe('session-expired');
  });

  it('ends a second challenge after a step-up in an error with no further sign-in', () => {
    const notice = stepUpFailed({ acrValues: ['urn:secret-gate:mfa'] });
    expect(notice).toMatchObject({ code: 'step-up-failed', action: 'none' });
    expect(notice.detail).toContain('still asks for a sign-in at level "urn:secret-gate:mfa"');
  });
});

describe('parseRetryAfter', () => {
  it.each([
    ['120', 120],
    [' 7 ', 7],
    ['0', 0],
    ['Sun, 01 Jun 2025 12:00:30 GMT', 30],
    ['Sun, 01 Jun 2025 11:00:00 GMT', 0],
  ])('reads %j as %i seconds', (value, seconds) => {
    expect(parseRetryAfter(value, NOW)).toBe(seconds);
  });

  it.each([[null], [undefined], [''], ['-5'], ['1.5'], ['soon'], ['2025-06-01T12:00:30Z']])(
    'ignores %j',
    (value) => {
      expect(parseRetryAfter(value, NOW)).toBeUndefined();
    },
  );
});

describe('challengeParam', () => {
  it('reads quoted and bare values and unescapes quotes', () => {
    const header = 'Bearer realm="a \\"b\\"", error=invalid_token, scope="x y"';
    expect(challengeParam(header, 'realm')).toBe('a "b"');
    expect(challengeParam(header, 'error')).toBe('invalid_token');
    expect(challengeParam(header, 'scope')).toBe('x y');
  });

  it('does not confuse error with error_description', () => {
    expect(challengeParam('Bearer error_description="x"', 'error')).toBeUndefined();
  });
});
