// Turns every answer the gate can give to GET /secret into words a person understands and the one
// action that helps. Pure: the client package has already turned the answer into a typed error.
import type { SecretGateError } from '@secret-gate/client';
import { describeStepUp, type StepUpRequest } from './step-up.js';

/** What went wrong, as a closed set the view switches on. */
export type NoticeCode =
  | 'session-expired'
  | 'not-signed-in'
  | 'step-up-required'
  | 'step-up-failed'
  | 'missing-scope'
  | 'rate-limited'
  | 'unavailable'
  | 'mint-failed'
  | 'gate-error'
  | 'unknown-set'
  | 'network'
  | 'bad-response';

/** The one thing the person can do about it. */
export type NoticeAction = 'sign-in' | 'step-up' | 'retry' | 'none';

export interface Notice {
  readonly code: NoticeCode;
  readonly title: string;
  readonly detail: string;
  readonly action: NoticeAction;
  /** Seconds the gate asked us to wait (Retry-After), when it said. */
  readonly retryAfterSeconds?: number;
  /** What a step-up sign-in must ask for (RFC 9470), on `step-up-required`. */
  readonly stepUp?: StepUpRequest;
}

function waitPhrase(seconds: number | undefined, fallback: string): string {
  if (seconds === undefined) return fallback;
  if (seconds <= 1) return 'Try again in a moment.';
  if (seconds < 120) return `Try again in ${seconds} seconds.`;
  return `Try again in ${Math.ceil(seconds / 60)} minutes.`;
}

/**
 * True when a new sign-in asking for the app's base scopes plus the named ones would ask for
 * nothing new: the IdP already declined one of them, so another round cannot help.
 */
function nothingToAdd(error: SecretGateError, baseScope: string | undefined): boolean {
  const scopes = error.stepUp?.scopes;
  if (error.stepUp?.reason !== 'insufficient_scope' || !scopes) return false;
  const base = (baseScope ?? '').split(/\s+/);
  return scopes.every((scope) => base.includes(scope));
}

/**
 * Maps a failed fetch of a set (the client package's typed error) to a notice. `baseScope` is
 * what the app's sign-in asks for: an `insufficient_scope` naming only those is no step-up.
 */
export function describeGateError(error: SecretGateError, baseScope?: string): Notice {
  const { retryAfterSeconds } = error;
  const wait = retryAfterSeconds === undefined ? {} : { retryAfterSeconds };
  const code = nothingToAdd(error, baseScope) ? 'forbidden' : error.code;
  switch (code) {
    case 'step_up_required': {
      // RFC 9470 §3: the token is fine, the sign-in behind it is too weak or too old for this set;
      // or (RFC 6750 `insufficient_scope`) it lacks a scope a new sign-in can ask for.
      const stepUp = error.stepUp ?? { reason: 'insufficient_user_authentication' };
      return {
        code: 'step-up-required',
        title:
          stepUp.reason === 'insufficient_scope'
            ? 'These secrets need another sign-in'
            : 'These secrets need a stronger sign-in',
        detail: `The gate releases them only after ${describeStepUp(stepUp)}. Sign in again to continue; your other secrets stay available.`,
        action: 'step-up',
        stepUp,
      };
    }
    case 'unauthorized':
      // RFC 6750 §3: a challenge without `error` means no token reached the gate at all.
      if (error.tokenRefused === false && error.challenges?.length) {
        return {
          code: 'not-signed-in',
          title: 'You are not signed in',
          detail: 'The gate did not receive a sign-in. Sign in to get your secrets.',
          action: 'sign-in',
        };
      }
      return SESSION_EXPIRED;
    case 'forbidden':
      return {
        code: 'missing-scope',
        title: 'You are not allowed to read the secrets',
        detail: error.scope
          ? `You are signed in, but your sign-in lacks the permission "${error.scope}". Ask an administrator to grant it, then sign in again.`
          : 'You are signed in, but your sign-in lacks the permission to read the secrets. Ask an administrator to grant it, then sign in again.',
        action: 'none',
      };
    case 'rate_limited':
      return {
        code: 'rate-limited',
        title: 'Too many requests — slow down',
        detail: `The gate is limiting how often secrets can be fetched. ${waitPhrase(retryAfterSeconds, 'Wait a little, then try again.')}`,
        action: 'retry',
        ...wait,
      };
    case 'unavailable':
      return {
        code: 'unavailable',
        title: 'The secret service is unavailable',
        detail: `The gate cannot check sign-ins right now. ${waitPhrase(retryAfterSeconds, 'Try again shortly.')}`,
        action: 'retry',
        ...wait,
      };
    case 'mint_failed':
      // The reason is the gate's own words about its downstream (never a secret); shown as is.
      return {
        code: 'mint-failed',
        title: 'A per-user value could not be issued',
        detail: `The gate could not mint one of this set's values${error.reason ? ` (${error.reason})` : ''}. ${waitPhrase(retryAfterSeconds, 'Try again later.')}`,
        action: 'retry',
        ...wait,
      };
    case 'server_error':
      return {
        code: 'gate-error',
        title: 'The gate ran into a problem',
        detail: `The gate answered with an error (HTTP ${error.status ?? 500}). ${waitPhrase(retryAfterSeconds, 'Try again later.')}`,
        action: 'retry',
        ...wait,
      };
    case 'not_found':
      return {
        code: 'unknown-set',
        title: 'The gate has no such set',
        detail:
          'The gate does not know this set of secrets. Ask an administrator to check the app configuration.',
        action: 'none',
      };
    case 'network':
    case 'aborted':
      return NETWORK_FAILURE;
    case 'bad_response':
      return BAD_RESPONSE;
  }
}

/** The gate rejected the token, or its lifetime ran out on this page's clock. */
export const SESSION_EXPIRED: Notice = Object.freeze({
  code: 'session-expired',
  title: 'Your session has expired',
  detail: 'The gate no longer accepts your sign-in. Sign in again to continue.',
  action: 'sign-in',
});

/**
 * The gate asked for a step-up again right after one: the IdP did not give the sign-in it asked
 * for, and a further round would only repeat the same redirect.
 */
export function stepUpFailed(stepUp: StepUpRequest | undefined): Notice {
  return {
    code: 'step-up-failed',
    title: 'The new sign-in was still not strong enough',
    detail: `The gate still asks for ${describeStepUp(stepUp ?? { reason: 'insufficient_user_authentication' })}, and the sign-in service did not provide it. Ask an administrator whether your account can sign in that way.`,
    action: 'none',
  };
}

/** The request never got an HTTP answer (offline, DNS, connection refused, CORS). */
export const NETWORK_FAILURE: Notice = Object.freeze({
  code: 'network',
  title: 'Could not reach the gate',
  detail: 'The request did not get through. Check your network connection, then try again.',
  action: 'retry',
});

/** A 2xx whose body is not a secret set. */
export const BAD_RESPONSE: Notice = Object.freeze({
  code: 'bad-response',
  title: 'The gate sent something unreadable',
  detail: 'The answer was not the expected set of secrets. Try again later.',
  action: 'retry',
});
