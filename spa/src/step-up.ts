// Step-up (RFC 9470): the OpenID Connect parameters that ask for what the gate's
// `insufficient_user_authentication` challenge named (OIDC Core §3.1.2.1: `acr_values`,
// `max_age`, `prompt=login`), and its wording. The challenge itself is read by the client package.
// Pure: time is passed in.
import type { StepUpChallenge } from '@secret-gate/client';

/** What the gate asks of the sign-in before it releases a set (read by the client package). */
export type StepUpRequest = StepUpChallenge;

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
