// Step-up (RFC 9470): a policy's authentication requirements (accepted `acr` values, required `amr`
// methods, a maximum age of the sign-in) checked against a verified token on every request, cached
// or not, as the scopes are. Pure: the token, the policy and the time in; its words are refusals.ts's.
import type { EpochSeconds } from '../clock.js';
import type { PolicyConfig } from '../config/model.js';
import { VerifyError } from '../errors.js';
import type { Authentication, VerifiedToken } from '../token/verified-token.js';
import { DIFFERENT_LEVEL, MORE_RECENT } from '../refusals.js';
import type { StepUpChallenge } from './decision.js';

/** A policy's step-up settings; all unset: no requirement, and no work per request. */
export type AuthenticationRequirement = Pick<PolicyConfig, 'acrValues' | 'amrValues' | 'maxAge'>;

const NONE: Authentication = { acr: [], amr: [], authTime: undefined, tolerance: 0 };

/** Why the class or methods fall short (messages name the claim, never echo its value). */
function levelProblem(
  { acr, amr }: Authentication,
  { acrValues, amrValues }: AuthenticationRequirement,
): string | undefined {
  if (acrValues !== undefined && !acr.some((value) => acrValues.includes(value)))
    return acr.length === 0
      ? '"acr" claim is missing'
      : '"acr" claim is none of the policy\'s "acrValues"';
  const lacking = amrValues?.filter((method) => !amr.includes(method)) ?? [];
  if (lacking.length > 0) return `"amr" claim lacks ${lacking.join(', ')}`;
  return undefined;
}

/**
 * Why the sign-in is too old for `maxAge`. The exact window: `auth_time` ≤ now (no tolerance on
 * the future side: a sign-in dated ahead would stretch the window by as much) and now − `auth_time`
 * ≤ `maxAge` + the issuer's `clockTolerance` (the tolerance on the past side only).
 */
function ageProblem(
  { authTime, tolerance }: Authentication,
  { maxAge }: AuthenticationRequirement,
  nowSeconds: EpochSeconds,
): string | undefined {
  if (maxAge === undefined) return undefined;
  if (authTime === undefined) return '"auth_time" claim is missing';
  // A sign-in "in the future" would stretch the window by as much: refused like an old one.
  if (authTime > nowSeconds) return '"auth_time" claim is in the future';
  if (nowSeconds - authTime > maxAge + tolerance)
    return '"auth_time" claim is older than the policy\'s "maxAge"';
  return undefined;
}

/**
 * Throws `insufficient_user_authentication` when the token's `acr` is none of `acrValues`, its `amr`
 * lacks one of `amrValues`, or its `auth_time` is missing, in the future or more than `maxAge`
 * seconds ago (the issuer's clock tolerance on that past side only). A requirement left unset checks nothing.
 */
export function checkAuthentication(
  token: Pick<VerifiedToken, 'authentication'>,
  requirement: AuthenticationRequirement,
  nowSeconds: EpochSeconds,
): void {
  const { acrValues, amrValues, maxAge } = requirement;
  // The common policy asks nothing: no work on its every request.
  if (acrValues === undefined && amrValues === undefined && maxAge === undefined) return;
  const claims = token.authentication ?? NONE;
  const problem = levelProblem(claims, requirement) ?? ageProblem(claims, requirement, nowSeconds);
  if (problem !== undefined) throw new VerifyError('insufficient_user_authentication', problem);
}

/**
 * What a new sign-in must bring for a token `checkAuthentication` refused: every requirement of the
 * policy, so one new sign-in meets them all, and RFC 9470's description of what fell short.
 */
export function stepUpChallenge(
  token: Pick<VerifiedToken, 'authentication'>,
  policy: AuthenticationRequirement,
): StepUpChallenge {
  const level = levelProblem(token.authentication ?? NONE, policy) !== undefined;
  return {
    description: level ? DIFFERENT_LEVEL : MORE_RECENT,
    acrValues: policy.acrValues,
    maxAge: policy.maxAge,
  };
}

/**
 * Until when (epoch seconds) an allow may be reused under `policy`: `auth_time` + `maxAge`, so
 * NGINX's edge cache never answers past it (the verifier's own cache re-checks every hit).
 */
export function authenticatedUntil(
  token: VerifiedToken,
  policy: AuthenticationRequirement,
): EpochSeconds {
  if (policy.maxAge === undefined) return Infinity;
  return (token.authentication?.authTime ?? -Infinity) + policy.maxAge;
}
