// The auth endpoint as a function: request headers in, a Decision (plain data) out, on one linear
// path. No sockets and no HTTP here, so tests call it directly, as the transport does.
import { hash } from 'node:crypto';
import { DEFAULT_POLICY, type PolicyConfig, type VerifierConfig } from '../config/model.js';
import type { DecisionCache } from './decision-cache.js';
import { statusFor, VerifyError } from '../errors.js';
import type { Logger } from '../log.js';
import { loggablePath } from '../log-path.js';
import type { Metrics } from '../metrics.js';
import {
  assertBearerSyntax,
  looksLikeJwt,
  readCredentials,
  unverifiedIssuer,
  type Credentials,
} from '../token/token-shape.js';
import { deny, withHeaders, type Decision } from './decision.js';
import type { DpopOutcome as Outcome, DpopStep, Grant, RevocationCheck } from './decision.js';
import type { VerifiedToken } from '../token/verified-token.js';
import { authenticated, authenticatedUntil } from './step-up.js';

/** What NGINX sends to /verify; http/contract.ts has a row (header, meaning) for each field. */
export interface VerifyRequest {
  readonly authorization?: string | undefined;
  /** The `X-SG-Policy` header; `default` when absent. */
  readonly policy?: string | undefined;
  readonly originalUri?: string | undefined;
  readonly originalMethod?: string | undefined;
  readonly dpop?: string | undefined;
  readonly originalOrigin?: string | undefined;
}

export type Authorize = (request: VerifyRequest) => Promise<Decision>;

export interface AuthorizerParts {
  readonly config: Pick<VerifierConfig, 'issuers' | 'policies'>;
  /** Each issuer's verifier (JWT or opaque), by `iss`. */
  readonly verifiers: ReadonlyMap<string, (token: string) => Promise<VerifiedToken>>;
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

const refusal = (error: VerifyError): Outcome => ({
  decision: deny(error.code),
  detail: error.message,
});

/** The first 8 hex digits of the token's SHA-256, for log lines: useless as a credential. */
const fingerprint = (token: string): string => hash('sha256', token, 'hex').slice(0, 8);

/**
 * The checks of verifier/README.md "What is checked", cheapest first: policy, token, cache, shape,
 * a JWT's `iss` and `alg` before any key fetch, then full verification (or the policy's opaque
 * issuer). On every request, cached or not: the policy's issuers, revocation, clients, scopes, the
 * DPoP proof, an allow's grant, step-up. A failure that is no token outcome (a bug) is a 401 `internal_error`.
 */
export function createAuthorizer(parts: AuthorizerParts): Authorize {
  const { cache, logger, metrics, dpop } = parts;
  const edgeCap = Math.floor(parts.edgeTtl ?? 0);
  const now = parts.now ?? Date.now;

  /** A policy with what each of its requests needs worked out once. */
  function prepare(policy: PolicyConfig) {
    if (policy.dpop !== 'off' && dpop === undefined)
      throw new TypeError(`policy "${policy.name}" uses DPoP but no DPoP step was given`);
    const isJwt = (iss: string) => parts.config.issuers.get(iss)?.type === 'jwt';
    const opaqueIssuer = policy.issuers.find((iss) => !isJwt(iss));
    return {
      config: policy,
      issuers: new Set(policy.issuers),
      /** The clients this policy serves; undefined: every client of its issuers. */
      clients: policy.clients && new Set(policy.clients),
      jwtIssuers: new Set(policy.issuers.filter(isJwt)),
      opaque: opaqueIssuer === undefined ? undefined : parts.verifiers.get(opaqueIssuer),
      grant: parts.grants?.get(policy.name),
      /** Cache keys of tokens this policy verifies: one for policies that read tokens alike. */
      keyPrefix: `${opaqueIssuer ?? ''}\u0000`,
      /** The answer without a token: a DPoP-only policy challenges for the DPoP scheme. */
      missing: dpop && policy.dpop === 'required' ? dpop.missingToken : deny('token_missing'),
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
      metrics?.cacheLookup('hit');
      // Verified for another policy that reads tokens alike: this one may not accept its issuer.
      if (!policy.issuers.has(hit.identity.issuer))
        throw new VerifyError('issuer_not_allowed', '"iss" is not allowed by this policy');
      return hit;
    }
    metrics?.cacheLookup('miss');
    // Shared per policy too: a verification checks the asking policy's issuers before any fetch.
    return cache.share(`${policy.config.name}\u0000${key}`, async () => {
      const stopTimer = metrics?.verification.startTimer();
      try {
        const fresh = await verifyToken(token, policy);
        // Kept only when something reads it: a gate without receivers caches no session claims.
        cache.set(key, parts.revocation ? fresh : { ...fresh, session: undefined });
        return fresh;
      } finally {
        stopTimer?.();
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
    return parts.verifiers.get(iss)!(token);
  }

  async function decide(request: VerifyRequest, policy: PreparedPolicy, credentials: Credentials) {
    /** The DPoP step, on every request: a cached token never skips its proof. */
    async function checkDpop(outcome: Outcome, jkt?: string): Promise<Outcome> {
      const mode = policy.config.dpop;
      // No step means every policy is `off` (prepare); a bound token is never a bearer token.
      if (mode === 'off' || dpop === undefined) {
        if (jkt === undefined) return outcome;
        return { decision: deny('dpop_binding_mismatch'), detail: 'DPoP-bound token as Bearer' };
      }
      const stepped = await dpop.step(mode, outcome.decision, credentials, request, jkt);
      return { decision: stepped.decision, detail: stepped.detail ?? outcome.detail };
    }
    let token: VerifiedToken;
    try {
      token = await verified(credentials.token, policy);
    } catch (error) {
      if (!(error instanceof VerifyError)) throw error;
      return checkDpop(refusal(error));
    }
    // The policy's own checks. A revocation refusal throws, so no DPoP challenge follows it.
    const verdict = parts.revocation?.(token, policy.config.revocation);
    if (verdict === 'revoked')
      throw new VerifyError('token_revoked', 'a logout or revocation event covers the token');
    if (verdict === 'unavailable')
      throw new VerifyError('revocation_unavailable', 'the shared revocation store is unreachable');
    const { identity } = token;
    const missing = policy.config.scopes.filter((scope) => !identity.scopes.includes(scope));
    const judged: Outcome =
      policy.clients?.has(identity.client) === false
        ? {
            decision: deny('client_not_allowed', identity),
            detail: `client ${JSON.stringify(identity.client)} is not one of the policy's clients`,
          }
        : missing.length === 0
          ? authenticated(token, policy.config, now) // step-up (RFC 9470), every request
          : {
              decision: deny('scope_insufficient', identity, policy.config.scopes),
              detail: `missing scopes: ${missing.join(' ')}`,
            };
    const { decision, detail } = await checkDpop(judged, token.jkt);
    // Only the token's own outcome (allow, its client or scopes refused) may be reused at the edge;
    // DPoP refusals carry none.
    if (decision.identity === undefined) return { decision, detail };
    // Never past the cap, `exp`, the key's trust or `auth_time` + `maxAge`; whole seconds down, so
    // no copy outlives them.
    const until = Math.min(
      token.exp,
      token.keyTrustedUntil ?? token.exp,
      authenticatedUntil(token, policy.config),
    );
    const edgeTtl = Math.min(edgeCap, Math.floor(until - now() / 1000));
    const timed = edgeTtl > 0 ? { ...decision, edgeTtl } : decision;
    if (timed.outcome !== 'allow' || policy.grant === undefined) return { decision: timed, detail };
    return { decision: withHeaders(timed, await policy.grant(now() / 1000, token.exp)), detail };
  }

  return async function authorize(request) {
    const name = request.policy ?? DEFAULT_POLICY;
    const policy = policies.get(name);
    let token: string | undefined;
    let outcome: Outcome;
    try {
      if (policy === undefined) {
        logger.warn(
          { policy: request.policy },
          'configuration problem: /verify asked for an unknown policy',
        );
        throw new VerifyError('policy_unknown', 'unknown policy');
      }
      const credentials = readCredentials(request.authorization, policy.config.dpop !== 'off');
      token = credentials?.token;
      outcome = credentials
        ? await decide(request, policy, credentials)
        : { decision: policy.missing, detail: undefined };
    } catch (error) {
      if (error instanceof VerifyError) outcome = refusal(error);
      else {
        // A bug, not a token outcome: never `signature_invalid`, never a 500 at NGINX.
        logger.error({ err: error }, 'unexpected verification failure');
        outcome = { decision: deny('internal_error'), detail: 'unexpected failure' };
      }
    }
    const { decision, detail } = outcome;
    metrics?.decision(decision.reason);
    if (decision.outcome !== 'allow') {
      const { reason } = decision;
      const fp = token === undefined ? undefined : fingerprint(token);
      const uri = loggablePath(request.originalUri);
      const method = request.originalMethod;
      const fields = { status: statusFor(reason), reason, policy: name, fp, uri, method, detail };
      logger.info(fields, 'denied');
    } else if (logger.isLevelEnabled('debug')) {
      const fp = token && fingerprint(token);
      logger.debug({ policy: name, fp, client: decision.identity?.client }, 'allowed');
    }
    return decision;
  };
}
