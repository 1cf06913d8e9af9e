// Every way a fetch of a set can fail, as one closed union of codes the app switches on. The
// mapping from an HTTP answer to a code lives in exactly one function, `errorFromAnswer`.
// Messages are safe to show: they never carry the token, a secret or the gate's body text.
import type { WWWAuthenticateChallenge } from 'oauth4webapi';
import { readScopeChallenge, readStepUpChallenge, type StepUpChallenge } from './step-up.js';

export type SecretGateErrorCode =
  /** 401: no token, or the gate refused it (expired, revoked, forged). Sign in again. */
  | 'unauthorized'
  /** 403: the token is fine but lacks what this set needs (a scope, a client). */
  | 'forbidden'
  /**
   * A new sign-in can answer it: 401 `insufficient_user_authentication` (RFC 9470, a stronger or
   * more recent sign-in) or 403 `insufficient_scope` naming the scopes (RFC 6750, ask for them).
   */
  | 'step_up_required'
  /** 404: the gate has no set of that name. */
  | 'not_found'
  /** 429: the gate's rate limit; `retryAfterSeconds` when it said. */
  | 'rate_limited'
  /** 502 `{"error":"mint_failed"}`: a per-user value could not be minted; `reason` says why. */
  | 'mint_failed'
  /** 503: the gate cannot check tokens right now. */
  | 'unavailable'
  /** Any other status, or a 5xx without the gate's own reason. */
  | 'server_error'
  /** A 2xx whose body is not a set. */
  | 'bad_response'
  /** No HTTP answer at all (offline, DNS, refused, CORS). */
  | 'network'
  /** The caller aborted the fetch. */
  | 'aborted';

export interface SecretGateError {
  readonly code: SecretGateErrorCode;
  /** One sentence for a person or a log line; never the token nor a value. */
  readonly message: string;
  /** The HTTP status, when there was an answer. */
  readonly status?: number;
  /** Seconds the gate asked to wait (`Retry-After`), on 429 and 503 when it said. */
  readonly retryAfterSeconds?: number;
  /** What the sign-in must satisfy, on `step_up_required`. */
  readonly stepUp?: StepUpChallenge;
  /** The scope a 403 `insufficient_scope` challenge names. */
  readonly scope?: string;
  /** The gate's `reason` on `mint_failed` (at most 200 characters). */
  readonly reason?: string;
  /** True when a 401 challenge carried `error` (a token reached the gate and was refused). */
  readonly tokenRefused?: boolean;
  /** The WWW-Authenticate challenges of a 401/403 as oauth4webapi parsed them. */
  readonly challenges?: readonly WWWAuthenticateChallenge[];
}

/** The parts of an answer the mapping reads; the body only for a 502. */
export interface GateAnswer {
  readonly status: number;
  readonly retryAfter: string | null;
  readonly challenges?: readonly WWWAuthenticateChallenge[] | undefined;
  /** The parsed JSON body of a 502, when it was JSON. */
  readonly body?: unknown;
}

/**
 * Reads a Retry-After value (RFC 9110 §10.2.3): delta-seconds or an IMF-fixdate, relative to
 * `nowMs`. Returns whole seconds ≥ 0, or undefined when absent or unreadable.
 */
export function parseRetryAfter(value: string | null, nowMs: number): number | undefined {
  if (value === null) return undefined;
  const text = value.trim();
  if (/^\d{1,10}$/.test(text)) return Number.parseInt(text, 10);
  if (!/^[A-Za-z]{3}, \d{2} [A-Za-z]{3} \d{4} \d{2}:\d{2}:\d{2} GMT$/.test(text)) return undefined;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - nowMs) / 1000));
}

function bearerParameter(
  challenges: readonly WWWAuthenticateChallenge[] | undefined,
  name: 'error' | 'scope',
): string | undefined {
  const challenge = challenges?.find(({ scheme }) => scheme === 'bearer' || scheme === 'dpop');
  return challenge?.parameters[name];
}

function mintReason(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const { error, reason } = body as { error?: unknown; reason?: unknown };
  if (error !== 'mint_failed') return undefined;
  return typeof reason === 'string' ? reason.slice(0, 200) : '';
}

/** Maps a non-2xx answer of the gate to its error value. */
export function errorFromAnswer(answer: GateAnswer, nowMs: number): SecretGateError {
  const { status, challenges } = answer;
  const parsed = challenges && challenges.length > 0 ? { challenges } : {};
  if (status === 401) {
    const stepUp = readStepUpChallenge(challenges);
    if (stepUp) {
      return {
        code: 'step_up_required',
        message: 'The set needs a stronger or more recent sign-in.',
        status,
        stepUp,
        ...parsed,
      };
    }
    // RFC 6750 §3: a challenge without `error` means no token reached the gate.
    const tokenRefused = bearerParameter(challenges, 'error') !== undefined;
    return {
      code: 'unauthorized',
      message: tokenRefused ? 'The gate refused the access token.' : 'No access token was sent.',
      status,
      tokenRefused,
      ...parsed,
    };
  }
  if (status === 403) {
    const stepUp = readScopeChallenge(challenges);
    if (stepUp) {
      return {
        code: 'step_up_required',
        message: 'The set needs a sign-in that grants more scopes.',
        status,
        stepUp,
        scope: stepUp.scopes?.join(' ') ?? '',
        ...parsed,
      };
    }
    const scope = bearerParameter(challenges, 'scope');
    return {
      code: 'forbidden',
      message: 'The access token does not allow this set.',
      status,
      ...(scope === undefined ? {} : { scope }),
      ...parsed,
    };
  }
  if (status === 404) return { code: 'not_found', message: 'The gate has no such set.', status };
  const retryAfterSeconds = parseRetryAfter(answer.retryAfter, nowMs);
  const wait = retryAfterSeconds === undefined ? {} : { retryAfterSeconds };
  if (status === 429) {
    return { code: 'rate_limited', message: 'Too many requests to the gate.', status, ...wait };
  }
  if (status === 503) {
    return { code: 'unavailable', message: 'The gate is unavailable.', status, ...wait };
  }
  const reason = status === 502 ? mintReason(answer.body) : undefined;
  if (reason !== undefined) {
    return {
      code: 'mint_failed',
      message: 'The gate could not mint a value of this set.',
      status,
      reason,
      ...wait,
    };
  }
  return { code: 'server_error', message: `The gate answered HTTP ${status}.`, status, ...wait };
}

export const NETWORK_ERROR: SecretGateError = Object.freeze({
  code: 'network',
  message: 'The request did not reach the gate.',
});

export const ABORTED: SecretGateError = Object.freeze({
  code: 'aborted',
  message: 'The fetch was aborted.',
});

export const BAD_RESPONSE: SecretGateError = Object.freeze({
  code: 'bad_response',
  message: 'The gate answered with something that is not a set.',
});
