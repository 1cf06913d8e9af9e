// The words of every refusal, in one place: the `WWW-Authenticate` challenges (RFC 6750 Bearer,
// RFC 9470 step-up, RFC 9449 DPoP) and the JSON bodies of the other routes. Callers name the reason
// and its parameters; clients and NGINX's maps parse these strings, so wording changes here only.
// Next to errors.ts (a reason's status) so the core, the transport and every plugin can use it;
// like it, inside the rings: the shapes below are declared here, and decision/'s match them.
import type { DenyCode } from './errors.js';

type Header = readonly [name: string, value: string];
/** A route's answer (decision/decision.ts's `Answer`). */
interface JsonAnswer {
  readonly status: number;
  readonly headers: readonly Header[];
  readonly body: string;
}
/** What a step-up challenge asks for (decision/decision.ts's `StepUpChallenge`). */
interface StepUpChallenge {
  /** DIFFERENT_LEVEL or MORE_RECENT, never built from the token. */
  readonly description: string;
  readonly acrValues?: readonly string[] | undefined;
  /** Whole seconds. */
  readonly maxAge?: number | undefined;
}

/** RFC 6750 §3: the challenge without an error, for a request that brought no token. */
export const BEARER_REALM = 'Bearer realm="secret-gate"';

/** RFC 9470 §3's own `error_description`s: a class or methods missing, a sign-in too old. */
export const DIFFERENT_LEVEL = 'A different authentication level is required';
export const MORE_RECENT = 'More recent authentication is required';

/**
 * The Bearer challenge of a 401 for a token that was sent (RFC 6750 §3.1 `invalid_token`), with a
 * fixed `error_description` for the two refusals a client can act on: a client id no header
 * carries unchanged, a token over the documented size (NGINX maps it to the body's reason).
 */
export function invalidTokenChallenge(description?: 'client_id_invalid' | 'token_too_large') {
  const base = `${BEARER_REALM}, error="invalid_token"`;
  return description === undefined ? base : `${base}, error_description="${description}"`;
}

/**
 * RFC 6750 §3.1 `insufficient_scope`, naming the policy's scopes (space-separated; quotes dropped,
 * as the parameter has no escaping) when it requires any.
 */
export function insufficientScopeChallenge(scopes: string | undefined): string {
  const scope = scopes === undefined ? '' : `, scope="${scopes.replace(/"/g, '')}"`;
  return `${BEARER_REALM}, error="insufficient_scope"${scope}`;
}

/**
 * The RFC 9470 §3 parameters of a step-up challenge: `acr_values` (space-separated, by preference)
 * and `max_age` (seconds), after the fixed description. Values come from the configuration only.
 */
function stepUpParameters({ description, acrValues, maxAge }: StepUpChallenge): string {
  const acr = acrValues === undefined ? '' : `, acr_values="${acrValues.join(' ')}"`;
  const age = maxAge === undefined ? '' : `, max_age="${maxAge}"`;
  return `error="insufficient_user_authentication", error_description="${description}"${acr}${age}`;
}

/** The Bearer step-up challenge (RFC 9470 §3). */
export function stepUpChallengeText(stepUp: StepUpChallenge): string {
  return `${BEARER_REALM}, ${stepUpParameters(stepUp)}`;
}

/** RFC 9449 §7.1 error codes (plus RFC 6750's `invalid_token` for the token itself). */
type DpopError = 'invalid_token' | 'invalid_dpop_proof' | 'use_dpop_nonce';

/** Fixed descriptions: never built from input, so nothing from the request reaches a header. */
const DPOP_DESCRIPTIONS: Partial<Record<DenyCode, readonly [DpopError, string]>> = {
  dpop_required: ['invalid_token', 'a DPoP-bound token and proof are required'],
  dpop_proof_missing: ['invalid_dpop_proof', 'a DPoP proof is required'],
  dpop_proof_invalid: ['invalid_dpop_proof', 'the DPoP proof is not valid for this request'],
  dpop_proof_replayed: ['invalid_dpop_proof', 'the DPoP proof was used before'],
  dpop_nonce_required: ['use_dpop_nonce', 'use the DPoP-Nonce of this answer'],
  dpop_binding_mismatch: ['invalid_token', 'the token is not bound to the presented DPoP key'],
  dpop_replay_unavailable: ['invalid_dpop_proof', 'the DPoP proof cannot be checked right now'],
};

/**
 * The `DPoP` challenge (RFC 9449 §7.1) listing `algs`: alone when no token came (RFC 6750 §3.1
 * style), RFC 9470's parameters for a client that must sign in again (`stepUp`), else `error`
 * (any token error is `invalid_token`) with a fixed `error_description`.
 */
export function dpopChallenge(code: DenyCode, algs: string, stepUp?: StepUpChallenge): string {
  if (code === 'token_missing') return `DPoP algs="${algs}"`;
  if (stepUp !== undefined) return `DPoP ${stepUpParameters(stepUp)}, algs="${algs}"`;
  const [error, description] = DPOP_DESCRIPTIONS[code] ?? [
    'invalid_token',
    'the token is not valid',
  ];
  return `DPoP error="${error}", error_description="${description}", algs="${algs}"`;
}

/** RFC 9728 §5.1: what every challenge ends in when the metadata URL is configured. */
export function resourceMetadataParameter(url: string | undefined): string {
  return url === undefined ? '' : `, resource_metadata="${url}"`;
}

/**
 * `X-Auth-Challenge` markers NGINX reads on a 403 (auth_request passes no other status): the
 * per-client call limit (`limited` → 429), a set value that could not be minted (`mint_failed …`
 * → 502, `mint_refused …` stays 403). For NGINX's maps, never shown as a challenge.
 */
export const EDGE_MARKERS = {
  limited: 'limited',
  mint_claim_missing: 'mint_refused claim_missing',
  mint_exchange_refused: 'mint_failed exchange_refused',
  mint_exchange_failed: 'mint_failed exchange_failed',
  mint_key_unavailable: 'mint_failed key_unavailable',
} as const;

/**
 * A JSON refusal's body: OAuth's `error` (RFC 6749 §5.2 style, with RFC 6750's and the receivers'
 * codes) and an optional fixed description, or a SET delivery error's `err` (RFC 8935 §2.3).
 */
export type RefusalBody =
  | {
      readonly error: 'invalid_request' | 'temporarily_unavailable' | 'too_many_requests';
      readonly error_description?: string;
    }
  | { readonly err: string };

const JSON_NO_STORE: readonly Header[] = [
  ['Content-Type', 'application/json'],
  ['Cache-Control', 'no-store'],
];

/** A route's JSON refusal, never stored; `headers` are added after the media type (`Retry-After`). */
export function jsonRefusal(
  status: number,
  body: RefusalBody,
  headers: readonly Header[] = [],
): JsonAnswer {
  return {
    status,
    headers: headers.length === 0 ? JSON_NO_STORE : [...JSON_NO_STORE, ...headers],
    body: JSON.stringify(body),
  };
}

/** A receiver asked with another method than POST. */
export const METHOD_NOT_ALLOWED = jsonRefusal(405, { error: 'invalid_request' });
/** A receiver body over the cap. */
export const BODY_TOO_LARGE = jsonRefusal(413, {
  error: 'invalid_request',
  error_description: 'the body is too large',
});
/** A receiver call without NGINX's edge key (http/edge-key.ts). */
export const UNKNOWN_CALLER = jsonRefusal(401, {
  error: 'invalid_request',
  error_description: 'unknown caller',
});
