// The auth endpoint as a function: request headers in, a Decision (plain data) out, on one linear
// path. No sockets and no HTTP here, so tests call it directly, as the transport does.
import { hash } from 'node:crypto';
import { DEFAULT_POLICY, type PolicyConfig, type VerifierConfig } from '../config/model.js';
import type { DecisionCache } from './decision-cache.js';
import { allow, deny, withHeaders, type Decision } from './decision.js';
import { statusFor, VerifyError } from '../errors.js';
import type { JwtVerifier } from '../token/jwt-verifier.js';
import type { Logger } from '../log.js';
import { loggablePath } from '../log-path.js';
import type { Metrics } from '../metrics.js';
import type { OpaqueVerifier } from '../token/opaque-verifier.js';
import {
  assertBearerSyntax,
  looksLikeJwt,
  readCredentials,
  unverifiedIssuer,
  type Credentials,
} from '../token/token-shape.js';
import type { DpopOutcome, DpopStep, Grant, RevocationCheck } from './plugins.js';
import type { VerifiedToken } from '../token/verified-token.js';

export interface VerifyRequest {
  readonly authorization?: string | undefined;
  /** The `X-SG-Policy` header; `default` when absent. */
  readonly policy?: string | undefined;
  readonly originalUri?: string | undefined;
  readonly originalMethod?: string | undefined;
  /** The `DPoP` proof header (RFC 9449), one value, size-capped by NGINX. */
  readonly dpop?: string | undefined;
  /** The gate's external origin as configured in NGINX (`SG_EXTERNAL_ORIGIN`), for `htu`. */
  readonly originalOrigin?: string | undefined;
}

export type Authorize = (request: VerifyRequest) => Promise<Decision>;

export interface AuthorizerParts {
  readonly config: Pick<VerifierConfig, 'issuers' | 'policies'>;
  readonly jwtVerifiers: ReadonlyMap<string, JwtVerifier>;
  readonly opaqueVerifiers: ReadonlyMap<string, OpaqueVerifier>;
  readonly cache: DecisionCache;
  readonly logger: Logger;
  readonly metrics?: Metrics | undefined;
  /** Per-policy grant plugins (signed cookies, for one); the core passes their headers on. */
  readonly grants?: ReadonlyMap<string, Grant> | undefined;
  /** Cap in seconds on how long NGINX may reuse an answer; 0 (the default) never. */
  readonly edgeTtl?: number | undefined;
  /** Milliseconds since the epoch; injected so tests can move time. */
  readonly now?: (() => number) | undefined;
  /** The DPoP step; required when a policy has `dpop` other than `off`. */
  readonly dpop?: { readonly step: DpopStep; readonly missingToken: Decision } | undefined;
  /** The pushed-revocation check; set when a receiver is on. */
  readonly revocation?: RevocationCheck | undefined;
}

/** A decision and why, for the log line (never a token). */
type Outcome = DpopOutcome;

const MISSING = deny('token_missing');
const UNKNOWN_POLICY = deny('policy_unknown');
const refusal = (error: VerifyError): Outcome => ({
  decision: deny(error.code),
  detail: error.message,
});

/** The first 8 hex digits of the token's SHA-256, for log lines: useless as a credential. */
const fingerprint = (token: string): string => hash('sha256', token, 'hex').slice(0, 8);

/**
 * Checks, in the order of verifier/README.md "What is checked": policy known (else 403); a token
 * present (else 401 without error code); its size; the cache; its shape; a JWT's `iss` allowed by
 * the policy and its `alg` by the issuer, both before any key fetch, then full verification (an
 * opaque token goes to the policy's opaque issuer). Then, on every request, cached or not: the
 * policy's issuers, revocation, scopes (403 when missing), the DPoP proof and the grant of an
 * allow. A failure that is no token outcome (a bug) is `internal_error`: a 401, never a 500.
 */
export function createAuthorizer(parts: AuthorizerParts): Authorize {
  const { cache, logger, metrics } = parts;
  const edgeCap = Math.floor(parts.edgeTtl ?? 0);
  const now = parts.now ?? Date.now;

  /** A policy with what each of its requests needs worked out once. */
  function prepare(policy: PolicyConfig) {
    if (policy.dpop !== 'off' && parts.dpop === undefined)
      throw new TypeError(`policy "${policy.name}" uses DPoP but no DPoP step was given`);
    const opaqueIssuer = policy.issuers.find((iss) => parts.opaqueVerifiers.has(iss));
    return {
      config: policy,
      issuers: new Set(policy.issuers),
      jwtIssuers: new Set(policy.issuers.filter((iss) => parts.jwtVerifiers.has(iss))),
      opaque: opaqueIssuer === undefined ? undefined : parts.opaqueVerifiers.get(opaqueIssuer),
      grant: parts.grants?.get(policy.name),
      /** Cache keys of tokens this policy verifies: one for policies that read tokens alike. */
      keyPrefix: `${opaqueIssuer ?? ''}\u0000`,
    } as const;
  }
  type PreparedPolicy = ReturnType<typeof prepare>;
  const policies = new Map(
    Array.from(parts.config.policies.values(), (policy) => [policy.name, prepare(policy)]),
  );

  /** The verified token from the cache, or verified now (once for concurrent misses) and cached. */
  async function verified(token: string, policy: PreparedPolicy): Promise<VerifiedToken> {
    // One flat digest is the key: a concatenated string would be stored twice (V8 flattens a
    // cons-string key into a second copy), which matters at 100,000 entries. One-shot `hash`
    // builds no Hash object: about half the cost of `createHash` on Node 20.
    const key = hash('sha256', policy.keyPrefix + token, 'base64url');
    const hit = cache.get(key);
    if (hit !== undefined) {
      metrics?.cacheHit();
      // Verified for another policy that reads tokens alike: this one may not accept its issuer.
      if (!policy.issuers.has(hit.identity.issuer))
        throw new VerifyError('issuer_not_allowed', '"iss" is not allowed by this policy');
      return hit;
    }
    metrics?.cacheMiss();
    // Shared per policy too: a verification checks the asking policy's issuers before any fetch.
    return cache.share(`${policy.config.name}\u0000${key}`, async () => {
      const started = performance.now();
      try {
        const fresh = await verifyToken(token, policy);
        // Kept only when something reads it: a gate without receivers caches no session claims.
        cache.set(key, parts.revocation ? fresh : { ...fresh, session: undefined });
        return fresh;
      } finally {
        metrics?.observeVerification((performance.now() - started) / 1000);
      }
    });
  }

  async function verifyToken(token: string, policy: PreparedPolicy): Promise<VerifiedToken> {
    // Three base64url segments are b64token syntax already; only other shapes need the wider scan.
    if (!looksLikeJwt(token)) {
      assertBearerSyntax(token);
      if (policy.opaque) return policy.opaque(token);
      throw new VerifyError('token_malformed', 'the token is not three base64url segments');
    }
    let iss: unknown;
    try {
      iss = unverifiedIssuer(token);
    } catch {
      // Some authorization servers hand out JWT-shaped tokens that only they can read.
      if (policy.opaque) return policy.opaque(token);
      throw new VerifyError('token_malformed', 'the token payload is not valid JSON');
    }
    const issuer = typeof iss === 'string' ? parts.config.issuers.get(iss) : undefined;
    if (issuer?.type !== 'jwt' && policy.opaque) return policy.opaque(token);
    if (typeof iss !== 'string') throw new VerifyError('issuer_unknown', '"iss" claim is missing');
    if (issuer === undefined)
      throw new VerifyError('issuer_unknown', '"iss" is not a configured issuer');
    if (!policy.jwtIssuers.has(iss))
      throw new VerifyError('issuer_not_allowed', '"iss" is not allowed by this policy');
    // jose checks `alg` against the issuer's allowlist before it asks for a key.
    return parts.jwtVerifiers.get(iss)!(token);
  }

  /** The DPoP step, on every request: a cached token never skips its proof. */
  async function checkDpop(
    policy: PreparedPolicy,
    outcome: Outcome,
    credentials: Credentials,
    request: VerifyRequest,
    jkt: string | undefined,
  ): Promise<Outcome> {
    const mode = policy.config.dpop;
    if (mode === 'off' && jkt === undefined) return outcome;
    // Only reachable for `off`: a bound token is never a bearer token.
    if (parts.dpop === undefined)
      return { decision: deny('dpop_binding_mismatch'), detail: 'DPoP-bound token as Bearer' };
    const stepped = await parts.dpop.step(mode, outcome.decision, credentials, request, jkt);
    return { decision: stepped.decision, detail: stepped.detail ?? outcome.detail };
  }

  /**
   * How long NGINX may reuse the answer: only a verified token's outcome (an allow, or a 403 for
   * missing scopes), never a 401, and never past the cap, the token's `exp` or its key's trust.
   * Whole seconds rounded down, so a copy never outlives the token.
   */
  function edgeTtlFor(token: VerifiedToken): number | undefined {
    if (edgeCap <= 0) return undefined;
    const until = Math.min(token.exp, token.keyTrustedUntil ?? token.exp);
    const seconds = Math.min(edgeCap, Math.floor(until - now() / 1000));
    return seconds > 0 ? seconds : undefined;
  }

  async function decide(
    request: VerifyRequest,
    policy: PreparedPolicy,
    credentials: Credentials,
  ): Promise<Outcome> {
    let token: VerifiedToken;
    try {
      token = await verified(credentials.token, policy);
    } catch (error) {
      if (!(error instanceof VerifyError)) throw error;
      return checkDpop(policy, refusal(error), credentials, request, undefined);
    }
    // The policy's own checks. A revocation refusal throws, so no DPoP challenge follows it.
    const verdict = parts.revocation?.(token, policy.config.revocation);
    if (verdict === 'revoked')
      throw new VerifyError('token_revoked', 'a logout or revocation event covers the token');
    if (verdict === 'unavailable')
      throw new VerifyError('revocation_unavailable', 'the shared revocation store is unreachable');
    const { identity } = token;
    const required = policy.config.scopes;
    const missing = required.filter((scope) => !identity.scopes.includes(scope));
    const judged: Outcome =
      missing.length === 0
        ? { decision: allow(identity), detail: undefined }
        : {
            decision: deny('scope_insufficient', identity, required),
            detail: `missing scopes: ${missing.join(' ')}`,
          };
    const { decision, detail } = await checkDpop(policy, judged, credentials, request, token.jkt);
    // Only the token's own outcome (allow, missing scopes) may be reused; DPoP refusals carry none.
    if (decision.identity === undefined) return { decision, detail };
    const edgeTtl = edgeTtlFor(token);
    const timed = edgeTtl === undefined ? decision : { ...decision, edgeTtl };
    if (timed.outcome !== 'allow' || policy.grant === undefined) return { decision: timed, detail };
    return { decision: withHeaders(timed, await policy.grant(now() / 1000, token.exp)), detail };
  }

  function record(request: VerifyRequest, outcome: Outcome, token: string | undefined): Decision {
    const { decision, detail } = outcome;
    const policy = request.policy ?? DEFAULT_POLICY;
    metrics?.decision(decision.reason);
    if (decision.outcome !== 'allow') {
      const { reason } = decision;
      const fp = token === undefined ? undefined : fingerprint(token);
      const uri = loggablePath(request.originalUri);
      const method = request.originalMethod;
      logger.info({ status: statusFor(reason), reason, policy, fp, uri, method, detail }, 'denied');
    } else if (logger.isLevelEnabled('debug')) {
      const fp = token && fingerprint(token);
      logger.debug({ policy, fp, client: decision.identity?.client }, 'allowed');
    }
    return decision;
  }

  return async function authorize(request) {
    const policy = policies.get(request.policy ?? DEFAULT_POLICY);
    if (policy === undefined) {
      logger.warn(
        { policy: request.policy },
        'configuration problem: /verify asked for an unknown policy',
      );
      return record(request, { decision: UNKNOWN_POLICY, detail: 'unknown policy' }, undefined);
    }
    let credentials: Credentials | undefined;
    try {
      credentials = readCredentials(request.authorization, policy.config.dpop !== 'off');
      if (credentials === undefined) {
        const missing =
          policy.config.dpop === 'required' && parts.dpop ? parts.dpop.missingToken : MISSING;
        return record(request, { decision: missing, detail: undefined }, undefined);
      }
      return record(request, await decide(request, policy, credentials), credentials.token);
    } catch (error) {
      if (error instanceof VerifyError) return record(request, refusal(error), credentials?.token);
      // A bug, not a token outcome: never `signature_invalid`, never a 500 at NGINX.
      logger.error({ err: error }, 'unexpected verification failure');
      const failed = { decision: deny('internal_error'), detail: 'unexpected failure' };
      return record(request, failed, credentials?.token);
    }
  };
}
