// Step-up: the authorization request parameters that ask for what the gate's challenge named, and
// its wording. RFC 9470's `insufficient_user_authentication` becomes OpenID Connect's `acr_values`,
// `max_age` and `prompt=login` (OIDC Core §3.1.2.1); RFC 6750's `insufficient_scope` becomes the
// app's own scopes plus the ones named (incremental authorization). The challenge itself is read
// by the client package. Pure: time is passed in.
import type { StepUpChallenge } from '@secret-gate/client';

/** What the gate asks of the sign-in before it releases a set (read by the client package). */
export type StepUpRequest = StepUpChallenge;

/**
 * The `scope` of a step-up sign-in: the app's base scopes, then each scope an `insufficient_scope`
 * challenge named that they lack (the base ones are asked again, or the new token would lose them).
 */
export function stepUpScope(baseScope: string, request: StepUpRequest): string {
  const scopes = baseScope.split(/\s+/).filter(Boolean);
  for (const scope of request.scopes ?? []) if (!scopes.includes(scope)) scopes.push(scope);
  return scopes.join(' ');
}

/**
 * The authorization request parameters for a step-up, besides `scope` (see `stepUpScope`). `prompt=login` is added when `max_age`
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
  if (request.scopes?.length) {
    parts.push(
      `a sign-in that grants ${request.scopes.map((scope) => `"${scope}"`).join(' and ')}`,
    );
  }
  if (request.acrValues?.length) {
    parts.push(`a sign-in at level ${request.acrValues.map((acr) => `"${acr}"`).join(' or ')}`);
  }
  if (request.maxAge === 0) parts.push('a sign-in made just now');
  else if (request.maxAge !== undefined)
    parts.push(`a sign-in from the last ${ageText(request.maxAge)}`);
  return parts.length > 0 ? parts.join(' and ') : 'a stronger sign-in';
}
