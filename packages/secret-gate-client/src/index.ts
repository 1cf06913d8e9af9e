// @secret-gate/client: the browser side of secret-gate. Fetch a set with a Bearer or DPoP token,
// hand a step-up challenge (RFC 9470, or RFC 6750 insufficient_scope) to the app, renew minted values before they expire, and
// report every failure as a typed value.
export {
  createSecretGateClient,
  type CredentialsGetter,
  type FetchSetOptions,
  type GateCredentials,
  type SecretGateClient,
  type SecretGateClientOptions,
  type SecretSet,
  type SetResult,
} from './client.js';
export { parseRetryAfter, type SecretGateError, type SecretGateErrorCode } from './gate-error.js';
export { DEFAULT_RENEWAL, renewalDelaySeconds, type RenewalPolicy } from './renewal.js';
export { EXPIRES_AT, readSetBody } from './secret-set.js';
export {
  INSUFFICIENT_SCOPE,
  INSUFFICIENT_USER_AUTHENTICATION,
  readScopeChallenge,
  readStepUpChallenge,
  type StepUpChallenge,
  type StepUpReason,
} from './step-up.js';
export { watchSet, type SetWatch, type WatchSetOptions } from './watch.js';
