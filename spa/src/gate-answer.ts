// Turns every answer the gate can give to GET /secret into words a person understands and the one
// action that helps. Pure: the caller passes the status and the two headers that matter, and the
// challenges oauth4webapi parsed from WWW-Authenticate.
import type { WWWAuthenticateChallenge } from 'oauth4webapi';
import { describeStepUp, readStepUpChallenge, type StepUpRequest } from './step-up.js';

/** What went wrong, as a closed set the view switches on. */
export type NoticeCode =
  | 'session-expired'
  | 'not-signed-in'
  | 'step-up-required'
  | 'step-up-failed'
  | 'missing-scope'
  | 'rate-limited'
  | 'unavailable'
  | 'gate-error'
  | 'unexpected-status'
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

/** The parts of a gate response the mapping reads. */
export interface GateFailure {
  readonly status: number;
  readonly retryAfter?: string | null;
  readonly wwwAuthenticate?: string | null;
  /** The WWW-Authenticate challenges as oauth4webapi parsed them (quoted strings, any order). */
  readonly challenges?: readonly WWWAuthenticateChallenge[] | undefined;
}

/**
 * Reads a Retry-After value (RFC 9110 §10.2.3): delta-seconds or an HTTP-date, relative to `now`.
 * Returns whole seconds ≥ 0, or undefined when absent or unreadable.
 */
export function parseRetryAfter(value: string | null | undefined, now: Date): number | undefined {
  if (value === null || value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number.parseInt(text, 10);
  // Only the IMF-fixdate form is accepted as a date; Date.parse alone would take "1.5" too.
  if (!/^[A-Za-z]{3}, \d{2} [A-Za-z]{3} \d{4} \d{2}:\d{2}:\d{2} GMT$/.test(text)) return undefined;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, Math.ceil((at - now.getTime()) / 1000));
}

/** Reads one auth-param (`error`, `scope`) from a Bearer challenge, quoted or not. */
export function challengeParam(
  header: string | null | undefined,
  name: string,
): string | undefined {
  if (!header) return undefined;
  const match = new RegExp(
    `(?:^|[\\s,])${name}\\s*=\\s*(?:"((?:[^"\\\\]|\\\\.)*)"|([^\\s,]+))`,
    'i',
  ).exec(header);
  if (!match) return undefined;
  return match[1] !== undefined ? match[1].replace(/\\(.)/g, '$1') : match[2];
}

function waitPhrase(seconds: number | undefined, fallback: string): string {
  if (seconds === undefined) return fallback;
  if (seconds <= 1) return 'Try again in a moment.';
  if (seconds < 120) return `Try again in ${seconds} seconds.`;
  return `Try again in ${Math.ceil(seconds / 60)} minutes.`;
}

/** Maps a non-2xx answer of the gate to a notice. */
export function describeGateFailure(failure: GateFailure, now: Date): Notice {
  const { status } = failure;
  if (status === 401) {
    // RFC 9470 §3: the token is fine, the sign-in behind it is too weak or too old for this set.
    const stepUp = readStepUpChallenge(failure.challenges);
    if (stepUp) {
      return {
        code: 'step-up-required',
        title: 'These secrets need a stronger sign-in',
        detail: `The gate releases them only after ${describeStepUp(stepUp)}. Sign in again to continue; your other secrets stay available.`,
        action: 'step-up',
        stepUp,
      };
    }
    // RFC 6750 §3: a challenge without `error` means no token reached the gate at all.
    if (challengeParam(failure.wwwAuthenticate, 'error') === undefined && failure.wwwAuthenticate) {
      return {
        code: 'not-signed-in',
        title: 'You are not signed in',
        detail: 'The gate did not receive a sign-in. Sign in to get your secrets.',
        action: 'sign-in',
      };
    }
    return SESSION_EXPIRED;
  }
  if (status === 403) {
    const scope = challengeParam(failure.wwwAuthenticate, 'scope');
    return {
      code: 'missing-scope',
      title: 'You are not allowed to read the secrets',
      detail: scope
        ? `You are signed in, but your sign-in lacks the permission "${scope}". Ask an administrator to grant it, then sign in again.`
        : 'You are signed in, but your sign-in lacks the permission to read the secrets. Ask an administrator to grant it, then sign in again.',
      action: 'none',
    };
  }
  const retryAfterSeconds = parseRetryAfter(failure.retryAfter, now);
  const wait = retryAfterSeconds === undefined ? {} : { retryAfterSeconds };
  if (status === 429) {
    return {
      code: 'rate-limited',
      title: 'Too many requests — slow down',
      detail: `The gate is limiting how often secrets can be fetched. ${waitPhrase(retryAfterSeconds, 'Wait a little, then try again.')}`,
      action: 'retry',
      ...wait,
    };
  }
  if (status === 503) {
    return {
      code: 'unavailable',
      title: 'The secret service is unavailable',
      detail: `The gate cannot check sign-ins right now. ${waitPhrase(retryAfterSeconds, 'Try again shortly.')}`,
      action: 'retry',
      ...wait,
    };
  }
  if (status >= 500) {
    return {
      code: 'gate-error',
      title: 'The gate ran into a problem',
      detail: `The gate answered with an error (HTTP ${status}). ${waitPhrase(retryAfterSeconds, 'Try again later.')}`,
      action: 'retry',
      ...wait,
    };
  }
  return {
    code: 'unexpected-status',
    title: 'Unexpected answer from the gate',
    detail: `The gate answered HTTP ${status}, which this app does not understand. Try again later.`,
    action: 'retry',
  };
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
    detail: `The gate still asks for ${describeStepUp(stepUp ?? {})}, and the sign-in service did not provide it. Ask an administrator whether your account can sign in that way.`,
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
