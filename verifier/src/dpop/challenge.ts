// The `DPoP` challenge of RFC 9449 §7.1, put in the decision's headers, which http/ writes in place
// of the Bearer one: one `WWW-Authenticate` (NGINX passes one on a 401), and `DPoP-Nonce`.
import { deny, type Decision, type Header, type StepUpChallenge } from '../decision/decision.js';
import type { DenyCode } from '../errors.js';
import { stepUpParameters } from '../decision/step-up.js';

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

/**
 * A deny answered with a `DPoP` challenge listing `algs`: alone when no token came (RFC 6750 §3.1
 * style), else with `error` (token errors become `invalid_token`) and a fixed `error_description`,
 * or RFC 9470's step-up parameters for a DPoP client that must sign in again (`stepUp`);
 * `DPoP-Nonce` when a nonce is handed out (§9).
 */
export function dpopDenial(
  code: DenyCode,
  answer: {
    readonly algs: string;
    readonly nonce?: string | undefined;
    readonly stepUp?: StepUpChallenge | undefined;
  },
): Decision {
  const [error, description] = DESCRIPTIONS[code] ?? ['invalid_token', 'the token is not valid'];
  const challenge =
    code === 'token_missing'
      ? `DPoP algs="${answer.algs}"`
      : answer.stepUp !== undefined
        ? `DPoP ${stepUpParameters(answer.stepUp)}, algs="${answer.algs}"`
        : `DPoP error="${error}", error_description="${description}", algs="${answer.algs}"`;
  const headers: Header[] = [['WWW-Authenticate', challenge]];
  if (answer.nonce !== undefined) headers.push(['DPoP-Nonce', answer.nonce]);
  return { ...deny(code), headers };
}

/** The answer headers this plugin renders (docs/architecture.md's /verify table). */
export const DPOP_HEADERS = [
  {
    name: 'WWW-Authenticate',
    on: '401, DPoP requests and `dpop: required` policies',
    meaning:
      '`DPoP error="…", error_description="…", algs="…"` (RFC 9449 §7.1; `DPoP algs="…"` alone without a token; the step-up parameters of RFC 9470 before `algs` for `insufficient_user_authentication`) in place of the Bearer challenge',
  },
  {
    name: 'DPoP-Nonce',
    on: '204, and the 401 `use_dpop_nonce`, when nonces are on',
    meaning: 'the server nonce the next proof must carry (RFC 9449 §9); NGINX passes it on',
  },
] as const;
