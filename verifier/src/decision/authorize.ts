// The auth endpoint as a function: request headers in, a Decision (plain data) out, on one straight
// path. No sockets and no HTTP here, so tests call it directly, as the transport does.
import { systemClock, type Clock, type EpochSeconds, type Seconds } from '../clock.js';
import { DEFAULT_POLICY, type VerifierConfig } from '../config/model.js';
import { VerifyError, type DenyCode } from '../errors.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import { readCredentials, type Credentials } from '../token/token-shape.js';
import type { TokenVerifier } from '../token/token-verifier.js';
import type { VerifiedToken } from '../token/verified-token.js';
import { carryLogTrace } from '../tracing/log-trace.js';
import { allow, deny, DpopRefusal, withHeaders, type Decision } from './decision.js';
import type { DpopStep, Grant, RevocationCheck, VerifyRequest } from './decision.js';
import { createDecisionLog, type DecisionLog } from './decision-log.js';
import {
  asBearer,
  checkDpop,
  checkPolicy,
  checkRevocation,
  preparePolicies,
  stepUpDenial,
  tokenOutcome,
} from './policy.js';
import type { PreparedPolicy, ProvenToken } from './policy.js';
import { checkAuthentication } from './step-up.js';

/**
 * A decision, synchronously when there is nothing to wait for (a cached token on a policy with no
 * grant, its DPoP proof, if any, by a key seen before and replays checked in memory: the common
 * request), else a promise of it.
 */
export type Authorize = (request: VerifyRequest) => Decision | Promise<Decision>;

export interface AuthorizerParts {
  readonly config: Pick<VerifierConfig, 'policies'>;
  /** The token verified for a policy's issuers, cached or fresh (token/token-verifier.ts). */
  readonly verifyToken: TokenVerifier;
  readonly logger: Logger;
  readonly metrics?: Metrics | undefined;
  /** Per-policy grant plugins (signed cookies, for one); the core passes their headers on. */
  readonly grants?: ReadonlyMap<string, Grant> | undefined;
  /** Cap on how long NGINX may reuse an answer; 0 (the default) never. */
  readonly edgeTtl?: Seconds | undefined;
  /** Injected so tests can move time. */
  readonly now?: Clock | undefined;
  /** The DPoP step; required when a policy has `dpop` other than `off`. */
  readonly dpop?: DpopStep | undefined;
  /** The pushed-revocation check; set when a receiver is on. */
  readonly revocation?: RevocationCheck | undefined;
  /** Where each decision is logged; default: decision-log.ts with a per-process subject key. */
  readonly decisionLog?: DecisionLog | undefined;
}

/** A decision and why, for the log line (never a token or proof). */
interface Outcome {
  readonly decision: Decision;
  readonly detail: string | undefined;
}

/** How far a request came: what the refusal path needs to answer it. */
interface Reached {
  readonly policy: PreparedPolicy | undefined;
  credentials?: Credentials | undefined;
  /** Set once the token is verified, live and proven: what follows is the token's own outcome. */
  proven?: ProvenToken | undefined;
}

/** Refusals of a token that is dead whatever proof came with it: never a DPoP challenge. */
const REVOKED = new Set<DenyCode>(['token_revoked', 'revocation_unavailable']);

/**
 * The checks of verifier/README.md "What is checked", cheapest first: the policy, the credentials,
 * the token (cached or verified now, for the policy's issuers); then on every request, cached or
 * not: revocation, the DPoP proof, the policy's clients and scopes, its step-up requirements (RFC
 * 9470), the edge TTL and an allow's grant. Every refusal is thrown and answered by `refusal`; a
 * failure that is no token outcome (a bug) is a 401 `internal_error`.
 */
export function createAuthorizer(parts: AuthorizerParts): Authorize {
  const { verifyToken, revocation, logger, metrics } = parts;
  const policies = preparePolicies(parts.config.policies, parts.dpop, parts.grants);
  const edgeCap = Math.floor(parts.edgeTtl ?? 0);
  const now = parts.now ?? systemClock;
  const logDecision = parts.decisionLog ?? createDecisionLog({ logger, metrics, now });

  /** The decision logged, then returned: the one exit of both paths. */
  function decided(request: VerifyRequest, name: string, reached: Reached, outcome: Outcome) {
    logDecision(request, name, reached.credentials?.token, outcome);
    return outcome.decision;
  }

  /** The policy's allow of a verified, live token whose proof passed (or that needed none). */
  function accepted(policy: PreparedPolicy, proven: ProvenToken, edge: number): Decision {
    checkPolicy(proven.token, policy);
    // One reading of the clock for both checks.
    const at = now();
    checkAuthentication(proven.token, policy.config, at);
    return tokenOutcome(allow(proven.token.identity), proven, policy, edge, at);
  }

  /**
   * Revocation, then the proof step: synchronous unless the DPoP step waits (a proof key seen
   * first, a shared replay store).
   */
  function prove(
    policy: PreparedPolicy,
    token: VerifiedToken,
    credentials: Credentials,
    request: VerifyRequest,
  ): ProvenToken | Promise<ProvenToken> {
    checkRevocation(revocation, token, policy.config);
    // The DPoP step may wait (a shared replay store, a first-seen proof key) and warn after it, so
    // it starts in the request's trace; its proof check costs far more than entering it.
    return policy.dpop === undefined
      ? asBearer(token)
      : carryLogTrace(checkDpop, policy, token, credentials, request);
  }

  /**
   * The rest of a request that waits: a verification, a DPoP proof, a grant. `proving`: the proof
   * step already begun on the cached token `verifying` and waiting.
   */
  async function later(
    request: VerifyRequest,
    name: string,
    policy: PreparedPolicy,
    credentials: Credentials,
    reached: Reached,
    verifying: VerifiedToken | Promise<VerifiedToken>,
    proving?: Promise<ProvenToken>,
  ): Promise<Decision> {
    let outcome: Outcome;
    try {
      reached.proven = await (proving ?? prove(policy, await verifying, credentials, request));
      const { token } = reached.proven;
      // Values minted per caller are never stored at the edge: another token must not get them.
      const allowed = accepted(policy, reached.proven, policy.grant?.perCaller ? 0 : edgeCap);
      const caller = { token, raw: credentials.token };
      const granted =
        policy.grant && withHeaders(allowed, await policy.grant(now(), token.exp, caller));
      outcome = { decision: granted ?? allowed, detail: undefined };
    } catch (error) {
      outcome = refusal(error, reached, edgeCap, now(), logger);
    }
    return decided(request, name, reached, outcome);
  }

  return function authorize(request) {
    const name = request.policy ?? DEFAULT_POLICY;
    const policy = policies.get(name);
    const reached: Reached = { policy };
    let outcome: Outcome;
    try {
      if (policy === undefined) throw unknownPolicy(logger, request.policy);
      const credentials = readCredentials(request.authorization, policy.dpop !== undefined);
      reached.credentials = credentials;
      if (credentials === undefined) throw new VerifyError('token_missing', 'no token');
      const token = verifyToken(credentials.token, policy.config);
      // A cached token on a policy with no grant is decided here, with no promise and no
      // microtask, unless its proof step waits: the same checks, in the same order, as `later`,
      // which runs in the request's trace so the lines written after its waits carry it
      // (tracing/log-trace.ts).
      if (token instanceof Promise || policy.grant !== undefined)
        return carryLogTrace(later, request, name, policy, credentials, reached, token);
      const proving = prove(policy, token, credentials, request);
      if (proving instanceof Promise)
        return carryLogTrace(later, request, name, policy, credentials, reached, token, proving);
      reached.proven = proving;
      outcome = { decision: accepted(policy, proving, edgeCap), detail: undefined };
    } catch (error) {
      outcome = refusal(error, reached, edgeCap, now(), logger);
    }
    return decided(request, name, reached, outcome);
  };
}

function unknownPolicy(logger: Logger, policy: string | undefined): VerifyError {
  logger.warn({ policy }, 'configuration problem: /verify asked for an unknown policy');
  return new VerifyError('policy_unknown', 'unknown policy');
}

/**
 * The one refusal path. A refusal of the proven token is its own outcome; one without a token is
 * the policy's `missing` answer; on a DPoP policy, the DPoP step's refusals, and a refused token of
 * a DPoP request or a DPoP-only policy, carry the DPoP challenge (a revoked one does not).
 */
function refusal(
  error: unknown,
  { policy, credentials, proven }: Reached,
  edgeCap: Seconds,
  now: EpochSeconds,
  logger: Logger,
): Outcome {
  if (!(error instanceof VerifyError)) {
    // A bug, not a token outcome: never `signature_invalid`, never a 500 at NGINX.
    logger.error({ err: error }, 'unexpected verification failure');
    return { decision: deny('internal_error'), detail: 'unexpected failure' };
  }
  const { code, message: detail } = error;
  if (proven !== undefined && policy !== undefined) {
    if (code === 'insufficient_user_authentication')
      return { decision: stepUpDenial(policy, proven, credentials), detail };
    const required = code === 'scope_insufficient' ? policy.config.scopes : undefined;
    const decision = deny(code, proven.token.identity, required);
    // A grant's refusal (a value that could not be minted) is of this moment: never reused.
    if (code.startsWith('mint_')) return { decision, detail };
    return { decision: tokenOutcome(decision, proven, policy, edgeCap, now), detail };
  }
  // RFC 6750 §3.1: no error code for a request without a token, and nothing to detail.
  if (credentials === undefined && code === 'token_missing' && policy !== undefined)
    return { decision: policy.missing, detail: undefined };
  const dpop = policy?.dpop;
  const own = error instanceof DpopRefusal ? error : undefined;
  const asked = credentials?.scheme === 'dpop' || dpop?.mode === 'required';
  if (dpop !== undefined && (own || (credentials && asked && !REVOKED.has(code))))
    return { decision: dpop.step.challenge(code, own?.nonce), detail };
  return { decision: deny(code), detail };
}
