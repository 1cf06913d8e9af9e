// Step-up (RFC 9470): the gate's `insufficient_user_authentication` challenge read into what the
// next authorization request must ask for. The challenge arrives already parsed by oauth4webapi's
// WWW-Authenticate parser (quoted strings, escapes, any parameter order), never split by hand.
import type { WWWAuthenticateChallenge } from 'oauth4webapi';

/** What the gate asks of the sign-in before it releases a set. */
export interface StepUpChallenge {
  /** Acceptable `acr` values, in the gate's order of preference. */
  readonly acrValues?: readonly string[];
  /** Seconds the sign-in (`auth_time`) may be old; 0 asks for a sign-in now. */
  readonly maxAge?: number;
}

/** The RFC 9470 error code of a step-up challenge. */
export const INSUFFICIENT_USER_AUTHENTICATION = 'insufficient_user_authentication';

/**
 * The step-up request of a 401's challenges: the first `Bearer` or `DPoP` challenge whose `error`
 * is `insufficient_user_authentication`. Its `acr_values` (space-separated) and `max_age`
 * (delta-seconds) are read; a malformed `max_age` is left out, not guessed.
 */
export function readStepUpChallenge(
  challenges: readonly WWWAuthenticateChallenge[] | undefined,
): StepUpChallenge | undefined {
  const challenge = challenges?.find(
    ({ scheme, parameters }) =>
      (scheme === 'bearer' || scheme === 'dpop') &&
      parameters.error === INSUFFICIENT_USER_AUTHENTICATION,
  );
  if (!challenge) return undefined;
  const acrValues = (challenge.parameters.acr_values ?? '').split(' ').filter(Boolean);
  const maxAgeText = challenge.parameters.max_age?.trim();
  const maxAge = maxAgeText && /^\d{1,10}$/.test(maxAgeText) ? Number(maxAgeText) : undefined;
  return {
    ...(acrValues.length > 0 ? { acrValues } : {}),
    ...(maxAge === undefined ? {} : { maxAge }),
  };
}
