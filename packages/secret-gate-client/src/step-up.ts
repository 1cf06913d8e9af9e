// Step-up: the gate's challenges that a new sign-in can answer, read into what the next
// authorization request must ask for. Two reasons: RFC 9470's `insufficient_user_authentication`
// (a stronger or more recent sign-in) and RFC 6750's `insufficient_scope` naming the scopes
// (incremental authorization: sign in again asking for them too). The challenges arrive already
// parsed by oauth4webapi's WWW-Authenticate parser (quoted strings, escapes, any parameter order),
// never split by hand.
import type { WWWAuthenticateChallenge } from 'oauth4webapi';

/** The RFC 9470 error code of a step-up challenge. */
export const INSUFFICIENT_USER_AUTHENTICATION = 'insufficient_user_authentication';
/** The RFC 6750 §3.1 error code of a token that lacks a scope. */
export const INSUFFICIENT_SCOPE = 'insufficient_scope';

export type StepUpReason = typeof INSUFFICIENT_USER_AUTHENTICATION | typeof INSUFFICIENT_SCOPE;

/** What the gate asks of the sign-in before it releases a set. */
export interface StepUpChallenge {
  /** Which challenge asked: a stronger sign-in (RFC 9470) or more scopes (RFC 6750). */
  readonly reason: StepUpReason;
  /** Acceptable `acr` values, in the gate's order of preference (RFC 9470). */
  readonly acrValues?: readonly string[];
  /** Seconds the sign-in (`auth_time`) may be old; 0 asks for a sign-in now (RFC 9470). */
  readonly maxAge?: number;
  /** The scopes the token must carry (`insufficient_scope`); never empty when present. */
  readonly scopes?: readonly string[];
}

function tokenChallenge(
  challenges: readonly WWWAuthenticateChallenge[] | undefined,
  error: StepUpReason,
): WWWAuthenticateChallenge | undefined {
  return challenges?.find(
    ({ scheme, parameters }) =>
      (scheme === 'bearer' || scheme === 'dpop') && parameters.error === error,
  );
}

/**
 * The step-up request of a 401's challenges: the first `Bearer` or `DPoP` challenge whose `error`
 * is `insufficient_user_authentication`. Its `acr_values` (space-separated) and `max_age`
 * (delta-seconds) are read; a malformed `max_age` is left out, not guessed.
 */
export function readStepUpChallenge(
  challenges: readonly WWWAuthenticateChallenge[] | undefined,
): StepUpChallenge | undefined {
  const challenge = tokenChallenge(challenges, INSUFFICIENT_USER_AUTHENTICATION);
  if (!challenge) return undefined;
  const acrValues = (challenge.parameters.acr_values ?? '').split(' ').filter(Boolean);
  const maxAgeText = challenge.parameters.max_age?.trim();
  const maxAge = maxAgeText && /^\d{1,10}$/.test(maxAgeText) ? Number(maxAgeText) : undefined;
  return {
    reason: INSUFFICIENT_USER_AUTHENTICATION,
    ...(acrValues.length > 0 ? { acrValues } : {}),
    ...(maxAge === undefined ? {} : { maxAge }),
  };
}

/**
 * The incremental-authorization request of a 403's challenges: the first `Bearer` or `DPoP`
 * challenge whose `error` is `insufficient_scope` and whose `scope` names at least one scope
 * (space-separated, RFC 6750 §3). Without a `scope` there is nothing a new sign-in could ask for,
 * so that 403 is no step-up.
 */
export function readScopeChallenge(
  challenges: readonly WWWAuthenticateChallenge[] | undefined,
): StepUpChallenge | undefined {
  const challenge = tokenChallenge(challenges, INSUFFICIENT_SCOPE);
  const scopes = (challenge?.parameters.scope ?? '').split(' ').filter(Boolean);
  return scopes.length > 0 ? { reason: INSUFFICIENT_SCOPE, scopes } : undefined;
}
