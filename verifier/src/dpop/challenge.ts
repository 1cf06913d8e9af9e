// The `DPoP` challenge of RFC 9449 §7.1, put in the decision's headers, which http/ writes in place
// of the Bearer one: one `WWW-Authenticate` (NGINX passes one on a 401), and `DPoP-Nonce`.
import { deny, type Decision, type Header, type StepUpChallenge } from '../decision/decision.js';
import type { DenyCode } from '../errors.js';
import { dpopChallenge } from '../refusals.js';

/**
 * A deny answered with a `DPoP` challenge listing `algs` (its words: refusals.ts's
 * `dpopChallenge`), and `DPoP-Nonce` when a nonce is handed out (§9).
 */
export function dpopDenial(
  code: DenyCode,
  answer: {
    readonly algs: string;
    readonly nonce?: string | undefined;
    readonly stepUp?: StepUpChallenge | undefined;
  },
): Decision {
  const headers: Header[] = [['WWW-Authenticate', dpopChallenge(code, answer.algs, answer.stepUp)]];
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
