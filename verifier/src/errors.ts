// Token and key outcomes as one error class with a closed code union, and the single place where a
// code becomes an HTTP status. auth_request only understands 2xx/401/403, so nothing maps elsewhere.

/** Why a request was not allowed. Closed on purpose: metrics and logs use these as label values. */
export type DenyCode =
  | 'token_missing'
  | 'token_malformed'
  | 'token_too_large'
  | 'issuer_unknown'
  | 'issuer_not_allowed'
  | 'alg_not_allowed'
  | 'key_unknown'
  | 'keys_unavailable'
  | 'signature_invalid'
  | 'token_expired'
  | 'token_not_yet_valid'
  | 'claim_invalid'
  | 'audience_mismatch'
  | 'typ_mismatch'
  | 'crit_unsupported'
  | 'token_inactive'
  | 'introspection_failed'
  | 'client_id_invalid'
  // The token names no client in any of the issuer's client claims: no secret set can be chosen.
  | 'client_unknown'
  // The token names a client the policy's `clients` does not list.
  | 'client_not_allowed'
  | 'scope_insufficient'
  // Step-up (RFC 9470): the token's `acr`, `amr` or `auth_time` does not meet the policy's
  // authentication requirements; answered 401 with an `insufficient_user_authentication` challenge.
  | 'insufficient_user_authentication'
  | 'policy_unknown'
  | 'internal_error'
  // DPoP (RFC 9449): answered with a `DPoP` challenge (dpop/challenge.ts).
  | 'dpop_required'
  | 'dpop_proof_missing'
  | 'dpop_proof_invalid'
  | 'dpop_proof_replayed'
  | 'dpop_nonce_required'
  | 'dpop_binding_mismatch'
  | 'dpop_replay_unavailable'
  // Pushed revocation (revocation/): a logout or Shared Signals event covers the token, or the
  // shared revocation store cannot be read for a policy that requires the check.
  | 'token_revoked'
  | 'revocation_unavailable'
  // Minted values (minted/): a template names a claim the token lacks (403 with its reason), or a
  // value could not be minted (NGINX answers 502 `mint_failed` with the reason).
  | 'mint_claim_missing'
  | 'mint_exchange_refused'
  | 'mint_exchange_failed'
  | 'mint_key_unavailable';

/**
 * A token or key outcome that denies the request. The message names the failing field and never
 * contains the token, a key or any secret; it is safe to log.
 */
export class VerifyError extends Error {
  override readonly name = 'VerifyError';
  constructor(
    readonly code: DenyCode,
    message: string,
  ) {
    super(message);
  }
}

/**
 * 401 "not authenticated", 403 "authenticated but not allowed" (RFC 6750 §3.1); auth_request
 * understands no 5xx, so `internal_error` (a bug, never a token outcome) is a 401: the token could
 * not be shown valid. `insufficient_user_authentication` is a 401 as RFC 9470 §3 says: the client
 * signs the user in again and retries. 403 too: a value of the set that could not be minted (the
 * body says why; NGINX turns a failed mint into a 502, verify-answer.ts), and a valid token naming no client (no secret set can be chosen) or a
 * client the policy does not serve, and an unknown policy (the gate is misconfigured; a 401 would
 * start a pointless browser sign-in loop).
 */
export function statusFor(code: DenyCode): 401 | 403 {
  return FORBIDDEN.has(code) ? 403 : 401;
}
const FORBIDDEN = new Set<DenyCode>([
  'scope_insufficient',
  'client_unknown',
  'client_not_allowed',
  'policy_unknown',
  'mint_claim_missing',
  'mint_exchange_refused',
  'mint_exchange_failed',
  'mint_key_unavailable',
]);
