// A policy as the decision path uses it (worked out once at start) and its checks of a verified
// token on every request, cached or not. Each refusal is thrown as a VerifyError; authorize.ts
// answers them all in one place.
import type { EpochSeconds, Seconds } from '../clock.js';
import type { PolicyConfig } from '../config/model.js';
import { VerifyError } from '../errors.js';
import type { Credentials } from '../token/token-shape.js';
import type { VerifiedToken } from '../token/verified-token.js';
import { authenticatedUntil, stepUpChallenge } from './step-up.js';
import { deny, withHeaders, type Decision, type Header } from './decision.js';
import type { DpopStep, Grant, RevocationCheck, VerifyRequest } from './decision.js';

export interface PreparedPolicy {
  readonly config: PolicyConfig;
  /** The clients this policy serves; undefined: every client of its issuers. */
  readonly clients: ReadonlySet<string> | undefined;
  /** The DPoP step and this policy's mode; undefined when its `dpop` is `off`. */
  readonly dpop: { readonly mode: 'allowed' | 'required'; readonly step: DpopStep } | undefined;
  /** What an allow hands out besides the identity (signed cookies, for one). */
  readonly grant: Grant | undefined;
  /** The answer without a token: a DPoP-only policy challenges for the DPoP scheme. */
  readonly missing: Decision;
}

/** Every policy by name; a policy that reads DPoP without a DPoP step is a wiring bug. */
export function preparePolicies(
  policies: ReadonlyMap<string, PolicyConfig>,
  dpop: DpopStep | undefined,
  grants: ReadonlyMap<string, Grant> | undefined,
): ReadonlyMap<string, PreparedPolicy> {
  const prepared = new Map<string, PreparedPolicy>();
  for (const policy of policies.values()) {
    const { name, dpop: mode } = policy;
    if (mode !== 'off' && dpop === undefined)
      throw new TypeError(`policy "${name}" uses DPoP but no DPoP step was given`);
    prepared.set(name, {
      config: policy,
      clients: policy.clients && new Set(policy.clients),
      dpop: mode === 'off' || dpop === undefined ? undefined : { mode, step: dpop },
      grant: grants?.get(name),
      missing:
        mode === 'required' && dpop ? dpop.challenge('token_missing') : deny('token_missing'),
    });
  }
  return prepared;
}

/**
 * Pushed revocation (logout tokens, RFC 8417 events) of the verified token. Before its DPoP proof:
 * a revoked token is refused as such, with no DPoP challenge, whatever proof came with it.
 */
export function checkRevocation(
  check: RevocationCheck | undefined,
  token: VerifiedToken,
  policy: PolicyConfig,
): void {
  const verdict = check?.(token, policy.revocation);
  if (verdict === 'revoked')
    throw new VerifyError('token_revoked', 'a logout or revocation event covers the token');
  if (verdict === 'unavailable')
    throw new VerifyError('revocation_unavailable', 'the shared revocation store is unreachable');
}

/** A live token whose proof passed, and the headers its answers carry (a DPoP nonce). */
export interface ProvenToken {
  readonly token: VerifiedToken;
  readonly headers: readonly Header[];
}

const NO_HEADERS: readonly Header[] = [];

/**
 * RFC 9449 on every accepted token, a cached one too; the headers an answer carries (a nonce).
 * Synchronous when the DPoP step is (dpop/index.ts: a proof key seen before, replays in memory).
 */
export function checkDpop(
  policy: PreparedPolicy,
  token: VerifiedToken,
  credentials: Credentials,
  request: VerifyRequest,
): ProvenToken | Promise<ProvenToken> {
  const { dpop } = policy;
  if (dpop === undefined) return asBearer(token);
  const headers = dpop.step.check(dpop.mode, credentials, request, token.jkt);
  if (headers instanceof Promise) return headers.then((waited) => ({ token, headers: waited }));
  return { token, headers };
}

/** The proof step of a policy that reads no DPoP, synchronous: only a bearer token passes. */
export function asBearer(token: VerifiedToken): ProvenToken {
  // A bound token is never a bearer token, not even on a policy that reads no DPoP.
  if (token.jkt !== undefined)
    throw new VerifyError('dpop_binding_mismatch', 'DPoP-bound token as Bearer');
  return { token, headers: NO_HEADERS };
}

/**
 * The policy's checks of a live token whose proof (if any) passed: its client, its scopes. A
 * refusal here is the token's own outcome: it keeps the identity and may be reused at the edge.
 * The policy's issuers were checked before verification (token/token-verifier.ts).
 */
export function checkPolicy(token: VerifiedToken, policy: PreparedPolicy): void {
  const { identity } = token;
  if (policy.clients?.has(identity.client) === false)
    throw new VerifyError(
      'client_not_allowed',
      `client ${JSON.stringify(identity.client)} is not one of the policy's clients`,
    );
  // The list of what is missing is built only for a refusal: an allow allocates nothing here.
  const { scopes } = policy.config;
  for (let i = 0; i < scopes.length; i++)
    if (!identity.scopes.includes(scopes[i]!)) {
      const missing = scopes.filter((one) => !identity.scopes.includes(one));
      throw new VerifyError('scope_insufficient', `missing scopes: ${missing.join(' ')}`);
    }
}

/**
 * The token's own outcome (an allow, its client or scopes refused) with its proof's headers and
 * how long NGINX may reuse it: never past the cap, `exp`, the key's trust or the policy's sign-in
 * age (`auth_time` + `maxAge`); whole seconds down, so no copy outlives them. No other decision
 * carries an edge TTL.
 */
export function tokenOutcome(
  decision: Decision,
  { token, headers }: ProvenToken,
  policy: PreparedPolicy,
  cap: Seconds,
  now: EpochSeconds,
): Decision {
  const proven = withHeaders(decision, headers);
  const until = Math.min(
    token.exp,
    token.keyTrustedUntil ?? token.exp,
    authenticatedUntil(token, policy.config),
  );
  const edgeTtl = Math.min(cap, Math.floor(until - now));
  if (!(edgeTtl > 0)) return proven;
  // The common answer (a plain allow) as one literal: no copy of the decision's fields.
  if (proven.outcome === 'allow' && proven.headers === undefined)
    return { outcome: 'allow', reason: 'allowed', identity: proven.identity, edgeTtl };
  return { ...proven, edgeTtl };
}

/**
 * RFC 9470's answer to a proven token its policy wants a stronger or newer sign-in for: what the
 * new sign-in must bring, in the DPoP scheme for a DPoP request. Never reused at the edge.
 */
export function stepUpDenial(
  { config, dpop }: PreparedPolicy,
  { token, headers }: ProvenToken,
  credentials: Credentials | undefined,
): Decision {
  const stepUp = stepUpChallenge(token, config);
  const code = 'insufficient_user_authentication';
  // The token was proven either way: its issuer and client belong in the decision log and span.
  const denial =
    dpop !== undefined && credentials?.scheme === 'dpop'
      ? { ...dpop.step.challenge(code, undefined, stepUp), identity: token.identity }
      : { ...deny(code, token.identity), stepUp };
  return withHeaders(denial, headers);
}
