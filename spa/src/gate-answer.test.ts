import { describe, expect, it } from 'vitest';
import { describeGateError, NETWORK_FAILURE, stepUpFailed } from './gate-answer.js';

const bearer = (parameters: Record<string, string>) => ({
  scheme: 'bearer' as const,
  parameters,
});

describe('describeGateError', () => {
  it.each([
    // error, code, action, retryAfterSeconds
    [{ code: 'unauthorized', tokenRefused: true }, 'session-expired', 'sign-in', undefined],
    [{ code: 'unauthorized' }, 'session-expired', 'sign-in', undefined],
    [
      { code: 'unauthorized', tokenRefused: false, challenges: [bearer({ realm: 'g' })] },
      'not-signed-in',
      'sign-in',
      undefined,
    ],
    [{ code: 'forbidden', scope: 'secrets:read' }, 'missing-scope', 'none', undefined],
    [{ code: 'rate_limited', retryAfterSeconds: 30 }, 'rate-limited', 'retry', 30],
    [{ code: 'rate_limited' }, 'rate-limited', 'retry', undefined],
    [{ code: 'unavailable', retryAfterSeconds: 5 }, 'unavailable', 'retry', 5],
    [{ code: 'mint_failed', reason: 'exchange refused' }, 'mint-failed', 'retry', undefined],
    [{ code: 'server_error', status: 500 }, 'gate-error', 'retry', undefined],
    [{ code: 'not_found', status: 404 }, 'unknown-set', 'none', undefined],
    [{ code: 'network' }, 'network', 'retry', undefined],
    [{ code: 'bad_response' }, 'bad-response', 'retry', undefined],
  ] as const)('maps %o to %s with action %s', (fields, code, action, retryAfterSeconds) => {
    const notice = describeGateError({ message: 'm', ...fields });
    expect(notice.code).toBe(code);
    expect(notice.action).toBe(action);
    expect(notice.retryAfterSeconds).toBe(retryAfterSeconds);
  });

  it('tells an expired session to sign in again', () => {
    const notice = describeGateError({ code: 'unauthorized', message: 'm', tokenRefused: true });
    expect(notice.title).toBe('Your session has expired');
    expect(notice.detail).toBe(
      'The gate no longer accepts your sign-in. Sign in again to continue.',
    );
  });

  it('names the missing scope from the challenge', () => {
    const notice = describeGateError({ code: 'forbidden', message: 'm', scope: 'secrets:read' });
    expect(notice.title).toBe('You are not allowed to read the secrets');
    expect(notice.detail).toContain('lacks the permission "secrets:read"');
  });

  it('still explains a 403 that carries no challenge', () => {
    const notice = describeGateError({ code: 'forbidden', message: 'm' });
    expect(notice.detail).toContain('lacks the permission to read the secrets');
  });

  it('asks to slow down and says how long to wait on 429', () => {
    const notice = describeGateError({ code: 'rate_limited', message: 'm', retryAfterSeconds: 30 });
    expect(notice.title).toBe('Too many requests — slow down');
    expect(notice.detail).toContain('Try again in 30 seconds.');
  });

  it('says the service is unavailable on 503 and rounds long waits to minutes', () => {
    const notice = describeGateError({ code: 'unavailable', message: 'm', retryAfterSeconds: 600 });
    expect(notice.title).toBe('The secret service is unavailable');
    expect(notice.detail).toBe(
      'The gate cannot check sign-ins right now. Try again in 10 minutes.',
    );
  });

  it("says which mint failed in the gate's words", () => {
    const notice = describeGateError({
      code: 'mint_failed',
      message: 'm',
      status: 502,
      reason: 'token exchange refused',
    });
    expect(notice.title).toBe('A per-user value could not be issued');
    expect(notice.detail).toBe(
      "The gate could not mint one of this set's values (token exchange refused). Try again later.",
    );
  });

  it('never shows the challenge text beyond the scope name', () => {
    const notice = describeGateError({
      code: 'unauthorized',
      message: 'm',
      tokenRefused: true,
      challenges: [bearer({ error: 'invalid_token', error_description: 'eyJhbGciOi...' })],
    });
    expect(JSON.stringify(notice)).not.toContain('eyJ');
  });

  it('describes a network failure as unreachable with a retry', () => {
    expect(NETWORK_FAILURE.title).toBe('Could not reach the gate');
    expect(NETWORK_FAILURE.action).toBe('retry');
  });
});

describe('describeGateError on an insufficient_scope challenge', () => {
  const BASE = 'openid secrets:read';
  const scopeError = (scopes: string[]) =>
    ({
      code: 'step_up_required',
      message: 'm',
      status: 403,
      scope: scopes.join(' '),
      stepUp: { reason: 'insufficient_scope', scopes },
    }) as const;

  it('asks for a sign-in that grants the scopes the base sign-in does not request', () => {
    const notice = describeGateError(scopeError(['payments']), BASE);
    expect(notice).toMatchObject({
      code: 'step-up-required',
      action: 'step-up',
      title: 'These secrets need another sign-in',
      stepUp: { reason: 'insufficient_scope', scopes: ['payments'] },
    });
    expect(notice.detail).toContain('only after a sign-in that grants "payments"');
  });

  it('names the missing scope, with no sign-in offered, when the base sign-in already asked for it', () => {
    const notice = describeGateError(scopeError(['secrets:read']), BASE);
    expect(notice).toMatchObject({ code: 'missing-scope', action: 'none' });
    expect(notice.detail).toContain('lacks the permission "secrets:read"');
  });

  it('ends a second scope challenge after a step-up in an error naming the scope', () => {
    const notice = stepUpFailed({ reason: 'insufficient_scope', scopes: ['payments'] });
    expect(notice.detail).toContain('still asks for a sign-in that grants "payments"');
  });
});

describe('describeGateError on a step-up challenge (RFC 9470)', () => {
  it('asks for a step-up naming the level and the age, and carries the request', () => {
    const notice = describeGateError({
      code: 'step_up_required',
      message: 'm',
      stepUp: {
        reason: 'insufficient_user_authentication',
        acrValues: ['urn:secret-gate:mfa'],
        maxAge: 300,
      },
      challenges: [bearer({ error_description: 'eyJ-like text the gate wrote' })],
    });
    expect(notice).toMatchObject({
      code: 'step-up-required',
      action: 'step-up',
      title: 'These secrets need a stronger sign-in',
      stepUp: {
        reason: 'insufficient_user_authentication',
        acrValues: ['urn:secret-gate:mfa'],
        maxAge: 300,
      },
    });
    expect(notice.detail).toBe(
      'The gate releases them only after a sign-in at level "urn:secret-gate:mfa" and a sign-in from the last 5 minutes. Sign in again to continue; your other secrets stay available.',
    );
    expect(JSON.stringify(notice)).not.toContain('eyJ');
  });

  it('ends a second challenge after a step-up in an error with no further sign-in', () => {
    const notice = stepUpFailed({
      reason: 'insufficient_user_authentication',
      acrValues: ['urn:secret-gate:mfa'],
    });
    expect(notice).toMatchObject({ code: 'step-up-failed', action: 'none' });
    expect(notice.detail).toContain('still asks for a sign-in at level "urn:secret-gate:mfa"');
  });
});
