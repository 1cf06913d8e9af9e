// The auth endpoint as a function: request headers in, Decision (plain data) out. No sockets and
// no HTTP here, so tests call it directly and both transports share it. A cache hit answers synchronously (no promise), which
// keeps the hot path of a busy gate free of microtask hops.
import { DEFAULT_POLICY, type PolicyConfig, type VerifierConfig } from '../config/model.js';
import type { DecisionCache } from './decision-cache.js';
import { allow, deny, shared, type Decision, type DecisionDecorator } from './decision.js';
import { statusFor, VerifyError } from '../errors.js';
import type { JwtVerifier } from '../token/jwt-verifier.js';
import type { Logger } from '../log.js';
import { loggablePath } from '../log-path.js';
import { fingerprint, tokenHash } from '../token/token-hash.js';
import type { Metrics } from '../metrics.js';
import type { OpaqueVerifier } from '../token/opaque-verifier.js';
import {
  assertBearerSyntax,
  looksLikeJwt,
  readCredentials,
  unverifiedIssuer,
  type Credentials,
} from '../token/token-shape.js';
import type { DpopStep } from '../dpop/binding.js';
import type { RevocationCheck } from '../revocation/check.js';
import type { VerifiedToken } from '../token/verified-token.js';

export interface VerifyRequest {
  readonly authorization?: string | undefined;
  /** `?policy=NAME`; `default` when absent. */
  readonly policy?: string | undefined;
  readonly originalUri?: string | undefined;
  readonly originalMethod?: string | undefined;
  /** The `DPoP` proof header (RFC 9449), one value, size-capped by NGINX. */
  readonly dpop?: string | undefined;
  /** The gate's external origin as configured in NGINX (`SG_EXTERNAL_ORIGIN`), for `htu`. */
  readonly originalOrigin?: string | undefined;
}

export type Authorize = (request: VerifyRequest) => Decision | Promise<Decision>;

export interface AuthorizerParts {
  readonly config: Pick<VerifierConfig, 'issuers' | 'policies'>;
  readonly jwtVerifiers: ReadonlyMap<string, JwtVerifier>;
  readonly opaqueVerifiers: ReadonlyMap<string, OpaqueVerifier>;
  readonly cache: DecisionCache;
  readonly logger: Logger;
  readonly metrics?: Metrics | undefined;
  /** Per-policy hook for extra allow grants (the CloudFront signer plugs in here). */
  readonly decorators?: ReadonlyMap<string, DecisionDecorator> | undefined;
  /** Cap in seconds on how long NGINX may reuse an answer; 0 (the default) never. */
  readonly edgeTtl?: number | undefined;
  /** Milliseconds since the epoch; injected so tests can move time. */
  readonly now?: (() => number) | undefined;
  /** The DPoP step (dpop/binding.ts); required when a policy has `dpop` other than `off`. */
  readonly dpop?: { readonly step: DpopStep; readonly missingToken: Decision } | undefined;
  /** The pushed-revocation check (revocation/check.ts); set when a receiver is on. */
  readonly revocation?: RevocationCheck | undefined;
}

interface PreparedPolicy {
  readonly config: PolicyConfig;
  readonly jwtIssuers: ReadonlySet<string>;
  readonly opaque: OpaqueVerifier | undefined;
  readonly decorate: DecisionDecorator | undefined;
  readonly keyPrefix: string;
}

interface Outcome {
  readonly decision: Decision;
  readonly detail: string | undefined;
}

const MISSING = deny('token_missing');
const REVOKED = deny('token_revoked');
const REVOCATION_UNAVAILABLE = deny('revocation_unavailable');
const UNKNOWN_POLICY = deny('policy_unknown');

/**
 * Checks, in order: policy known (else 403); a Bearer token present (else 401 without error
 * code); its size; the cache; its shape (three base64url segments, else RFC 6750 b64token
 * syntax); then for a JWT `iss` allowed by the policy and `alg` allowed for that issuer (jose
 * checks it before it asks for a key) — both before any key fetch — and full verification; for
 * an opaque token the policy's introspection/user-info issuer. Finally the policy's scopes (403
 * when missing).
 */
export function createAuthorizer(parts: AuthorizerParts): Authorize {
  const { cache, logger, metrics } = parts;
  const edgeCap = Math.floor(parts.edgeTtl ?? 0);
  const now = parts.now ?? Date.now;
  const policies = new Map<string, PreparedPolicy>();
  for (const policy of parts.config.policies.values()) {
    if (policy.dpop !== 'off' && parts.dpop === undefined)
      throw new TypeError(`policy "${policy.name}" uses DPoP but no DPoP step was given`);
    const opaqueIssuer = policy.issuers.find((iss) => parts.opaqueVerifiers.has(iss));
    policies.set(policy.name, {
      config: policy,
      jwtIssuers: new Set(policy.issuers.filter((iss) => parts.jwtVerifiers.has(iss))),
      opaque: opaqueIssuer === undefined ? undefined : parts.opaqueVerifiers.get(opaqueIssuer),
      decorate: parts.decorators?.get(policy.name),
      keyPrefix: `${policy.name}\u0000`,
    });
  }

  function finish(
    request: VerifyRequest,
    outcome: Outcome,
    token: string | undefined,
    policy?: PreparedPolicy,
  ): Decision | Promise<Decision> {
    if (outcome.decision.outcome !== 'allow' || policy?.decorate === undefined)
      return record(request, outcome, token, policy);
    const decorated = policy.decorate(outcome.decision);
    return decorated instanceof Promise
      ? decorated.then((decision) =>
          record(request, { decision, detail: outcome.detail }, token, policy),
        )
      : record(request, { decision: decorated, detail: outcome.detail }, token, policy);
  }

  /** The DPoP step on a token's decision (cached or fresh), then the decorators. */
  function afterToken(
    request: VerifyRequest,
    outcome: Outcome,
    credentials: Credentials,
    policy: PreparedPolicy,
  ): Decision | Promise<Decision> {
    if (parts.revocation !== undefined) {
      const verdict = parts.revocation(outcome.decision, policy.config.revocation);
      if (verdict !== 'valid') {
        const refused = verdict === 'revoked' ? REVOKED : REVOCATION_UNAVAILABLE;
        const detail =
          verdict === 'revoked'
            ? 'a logout or revocation event covers the token'
            : 'the shared revocation store is unreachable';
        return finish(request, { decision: refused, detail }, credentials.token, policy);
      }
    }
    const mode = policy.config.dpop;
    if (mode === 'off' && outcome.decision.jkt === undefined)
      return finish(request, outcome, credentials.token, policy);
    if (parts.dpop === undefined) {
      // Only reachable for `off`: a bound token is never a bearer token.
      const refused = deny('dpop_binding_mismatch');
      return finish(
        request,
        { decision: refused, detail: 'DPoP-bound token as Bearer' },
        credentials.token,
        policy,
      );
    }
    const stepped = parts.dpop.step(mode, outcome.decision, {
      scheme: credentials.scheme,
      token: credentials.token,
      proof: request.dpop,
      method: request.originalMethod,
      path: request.originalUri,
      origin: request.originalOrigin,
    });
    const done = (result: { decision: Decision; detail: string | undefined }) =>
      finish(
        request,
        { decision: result.decision, detail: result.detail ?? outcome.detail },
        credentials.token,
        policy,
      );
    return stepped instanceof Promise ? stepped.then(done) : done(stepped);
  }

  function record(
    request: VerifyRequest,
    outcome: Outcome,
    token: string | undefined,
    policy?: PreparedPolicy,
  ): Decision {
    const decision = withEdgeTtl(outcome.decision);
    metrics?.decision(decision);
    if (decision.outcome !== 'allow') {
      logger.info(
        {
          status: statusFor(decision.reason),
          reason: decision.reason,
          policy: request.policy ?? DEFAULT_POLICY,
          fp: token === undefined ? undefined : fingerprint(token),
          uri: loggablePath(request.originalUri),
          method: request.originalMethod,
          detail: outcome.detail,
        },
        'denied',
      );
    } else if (logger.isLevelEnabled('debug')) {
      logger.debug(
        {
          policy: policy?.config.name,
          fp: token && fingerprint(token),
          client: decision.identity?.client,
        },
        'allowed',
      );
    }
    return decision;
  }

  /**
   * How long NGINX may reuse the answer: only a verified token's outcome (an allow, or a 403 for
   * missing scopes), never a 401, and never past the cap, the token's `exp` or its key's trust.
   * Whole seconds rounded down, so a copy never outlives the token.
   */
  function withEdgeTtl(decision: Decision): Decision {
    if (edgeCap <= 0 || decision.reusableUntil === undefined) return decision;
    const left = Math.floor(decision.reusableUntil - now() / 1000);
    const edgeTtl = Math.max(0, Math.min(edgeCap, left));
    return edgeTtl === 0 ? decision : { ...decision, edgeTtl };
  }

  async function verifyFresh(token: string, policy: PreparedPolicy, key: string): Promise<Outcome> {
    const started = performance.now();
    let verified: VerifiedToken;
    try {
      verified = await verifyToken(token, policy);
    } catch (error) {
      if (error instanceof VerifyError)
        return { decision: deny(error.code), detail: error.message };
      logger.error({ err: error }, 'unexpected verification failure');
      return { decision: deny('internal_error'), detail: 'unexpected verification failure' };
    } finally {
      metrics?.observeVerification((performance.now() - started) / 1000);
    }
    const granted = new Set(verified.identity.scopes);
    const missing = policy.config.scopes.filter((scope) => !granted.has(scope));
    const reusableUntil = Math.min(verified.exp, verified.keyTrustedUntil ?? verified.exp);
    const judged =
      missing.length === 0
        ? allow(verified.identity, verified.exp)
        : deny('scope_insufficient', policy.config.scopes, verified.identity);
    const bound =
      verified.jkt === undefined
        ? { ...judged, reusableUntil }
        : { ...judged, jkt: verified.jkt, reusableUntil };
    // Kept only when something reads it: a gate without receivers caches no session claims.
    const decision =
      parts.revocation === undefined || verified.session === undefined
        ? bound
        : { ...bound, session: verified.session };
    cache.set(key, {
      reusableUntil,
      policy: policy.config.name,
      decision: { ...decision, identity: decision.identity ?? verified.identity },
      exp: verified.exp,
      nbf: verified.nbf,
      kid: shared(verified.kid),
    });
    return {
      decision,
      detail: missing.length === 0 ? undefined : `missing scopes: ${missing.join(' ')}`,
    };
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

  return function authorize(request) {
    const policy = policies.get(request.policy ?? DEFAULT_POLICY);
    if (policy === undefined) {
      logger.warn(
        { policy: request.policy },
        'configuration problem: /verify asked for an unknown policy',
      );
      return finish(request, { decision: UNKNOWN_POLICY, detail: 'unknown policy' }, undefined);
    }
    let credentials: Credentials | undefined;
    try {
      credentials = readCredentials(request.authorization, policy.config.dpop !== 'off');
    } catch (error) {
      const { code, message } = error as VerifyError;
      return finish(request, { decision: deny(code), detail: message }, undefined, policy);
    }
    if (credentials === undefined) {
      const missing =
        policy.config.dpop === 'required' && parts.dpop ? parts.dpop.missingToken : MISSING;
      return finish(request, { decision: missing, detail: undefined }, undefined, policy);
    }
    const { token } = credentials;

    // One flat digest of policy + token is the key: a concatenated string would be stored twice
    // (V8 flattens a cons-string key into a second copy), which matters at 100,000 entries.
    const key = tokenHash(token, policy.keyPrefix);
    const hit = cache.get(key, policy.config.name);
    if (hit !== undefined) {
      metrics?.cacheHit();
      return afterToken(request, { decision: hit, detail: 'cached' }, credentials, policy);
    }
    metrics?.cacheMiss();
    return cache
      .share(key, () => verifyFresh(token, policy, key))
      .then((outcome) => afterToken(request, outcome, credentials, policy))
      .catch((error: unknown) => {
        // A bug must still produce an answer NGINX understands (never a 500, never a hang).
        logger.error(
          { err: error instanceof Error ? error.message : String(error) },
          'unexpected failure in authorize',
        );
        return record(
          request,
          { decision: deny('internal_error'), detail: 'unexpected failure' },
          token,
          policy,
        );
      });
  };
}
