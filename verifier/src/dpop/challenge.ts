// The `DPoP` challenge of RFC 9449 §7.1, as decision data. One `WWW-Authenticate` value per
// answer (NGINX's auth_request passes one on a 401), `algs` always present so a client learns
// which keys it may use, and `DPoP-Nonce` beside a `use_dpop_nonce` error (§9).
import type { DenyCode } from '../errors.js';
import type { Decision, Header } from '../decision.js';

/** RFC 9449 §7.1 error codes (plus RFC 6750's `invalid_token` for the token itself). */
type DpopError = 'invalid_token' | 'invalid_dpop_proof' | 'use_dpop_nonce';

/** Fixed descriptions: never built from input, so nothing from the request reaches a header. */
const DESCRIPTIONS: Partial<Record<DenyCode, readonly [DpopError, string]>> = {
  dpop_required: ['invalid_token', 'a DPoP-bound token and proof are required'],
  dpop_proof_missing: ['invalid_dpop_proof', 'a DPoP proof is required'],
  dpop_proof_invalid: ['invalid_dpop_proof', 'the DPoP proof is not valid for this request'],
  dpop_proof_replayed: ['invalid_dpop_proof', 'the DPoP proof was used before'],
  dpop_nonce_required: ['use_dpop_nonce', 'use the DPoP-Nonce of this answer'],
  dpop_binding_mismatch: ['invalid_token', 'the token is not bound to the presented DPoP key'],
  dpop_replay_unavailable: ['invalid_dpop_proof', 'the DPoP proof cannot be checked right now'],
};

export interface ChallengeOptions {
  /** Space-separated proof algorithms for `algs`. */
  readonly algs: string;
  /** A fresh server nonce to send as `DPoP-Nonce`, when nonces are on. */
  readonly nonce?: string | undefined;
}

/** `DPoP algs="…"`: what a request without any token gets when the policy requires DPoP. */
export function bareChallenge(options: ChallengeOptions): Header {
  return ['WWW-Authenticate', `DPoP algs="${options.algs}"`];
}

/**
 * A 401 with a `DPoP` challenge. `code` picks the RFC 9449 error; token errors (expired, bad
 * signature …) become `invalid_token`. A DPoP-scheme request never gets a `Bearer` challenge.
 */
export function dpopDenial(code: DenyCode, options: ChallengeOptions): Decision {
  const [error, description] = DESCRIPTIONS[code] ?? ['invalid_token', 'the token is not valid'];
  const headers: Header[] = [
    [
      'WWW-Authenticate',
      `DPoP error="${error}", error_description="${description}", algs="${options.algs}"`,
    ],
  ];
  if (options.nonce !== undefined) headers.push(['DPoP-Nonce', options.nonce]);
  return { status: 401, reason: code, identity: undefined, headers };
}

/** No token at all on a `required` policy: 401 with `DPoP algs="…"` and no error (RFC 6750 §3.1). */
export function missingTokenDenial(options: ChallengeOptions): Decision {
  return {
    status: 401,
    reason: 'token_missing',
    identity: undefined,
    headers: [bareChallenge(options)],
  };
}
