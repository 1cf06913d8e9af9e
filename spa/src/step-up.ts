// Step-up (RFC 9470): the gate's `insufficient_user_authentication` challenge read into what the
// next authorization request must ask for, and the OpenID Connect parameters that ask for it
// (OIDC Core §3.1.2.1: `acr_values`, `max_age`, `prompt=login`). Pure: the challenge arrives
// already parsed (oauth4webapi's WWW-Authenticate parser) and time is passed in.
import type { WWWAuthenticateChallenge } from 'oauth4webapi';

/** What the gate asks of the sign-in before it releases a set. */
export interface StepUpRequest {
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
): StepUpRequest | undefined {
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

/**
 * The authorization request parameters for a step-up. `prompt=login` is added when `max_age`
 * cannot be met by the current sign-in: 0, a sign-in time the app does not know, or one already
 * older than `max_age` (OIDC Core asks the IdP to re-authenticate then too, but not every IdP
 * does it for `max_age` alone). `authTime` and `nowSeconds` are epoch seconds.
 */
export function stepUpParameters(
  request: StepUpRequest,
  authTime: number | undefined,
  nowSeconds: number,
): Record<string, string> {
  const { acrValues, maxAge } = request;
  const stale =
    maxAge !== undefined &&
    (maxAge === 0 || authTime === undefined || nowSeconds - authTime >= maxAge);
  return {
    ...(acrValues?.length ? { acr_values: acrValues.join(' ') } : {}),
    ...(maxAge === undefined ? {} : { max_age: String(maxAge) }),
    ...(stale ? { prompt: 'login' } : {}),
  };
}

function ageText(seconds: number): string {
  if (seconds < 120) return `${seconds} seconds`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} minutes`;
  return `${Math.round(seconds / 3600)} hours`;
}

/** Says in words what the gate asks for, e.g. "a sign-in at level urn:x:mfa". */
export function describeStepUp(request: StepUpRequest): string {
  const parts: string[] = [];
  if (request.acrValues?.length) {
    parts.push(`a sign-in at level ${request.acrValues.map((acr) => `"${acr}"`).join(' or ')}`);
  }
  if (request.maxAge === 0) parts.push('a sign-in made just now');
  else if (request.maxAge !== undefined)
    parts.push(`a sign-in from the last ${ageText(request.maxAge)}`);
  return parts.length > 0 ? parts.join(' and ') : 'a stronger sign-in';
}
