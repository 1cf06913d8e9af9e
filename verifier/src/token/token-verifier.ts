// A policy's token, verified: routed by its shape and `iss` to the verifier of its issuer (a JWT
// issuer's, or the policy's opaque one), remembered in the token cache, and verified once for
// concurrent misses. Only issuer questions are answered here; authorize.ts applies the policy.
import { hash } from 'node:crypto';
import type { PolicyConfig, VerifierConfig } from '../config/model.js';
import { VerifyError } from '../errors.js';
import type { Metrics } from '../metrics.js';
import { decodeClaims, type DecodedClaims } from './jwt-claims.js';
import type { TokenCache } from './token-cache.js';
import { assertBearerSyntax, hasCanonicalSignature, looksLikeJwt } from './token-shape.js';
import type { VerifiedToken } from './verified-token.js';

/**
 * One issuer's verifier (JWT or opaque); `decoded`, a JWT's claims as routing read them. It
 * throws or rejects a refusal; a JWT verifier whose key is known answers synchronously.
 */
export type IssuerVerifier = (
  token: string,
  decoded?: DecodedClaims,
) => VerifiedToken | Promise<VerifiedToken>;

/**
 * The token verified for `policy`: one of its issuers' tokens, cached or fresh; else it throws (a
 * miss rejects). A cache hit is returned as it is, with no promise: nothing is waited for.
 */
export type TokenVerifier = (
  token: string,
  policy: PolicyConfig,
) => VerifiedToken | Promise<VerifiedToken>;

/** How the cache answered a lookup: a hit, a miss verified now, or a miss joining one in flight. */
export type CacheLookup = 'hit' | 'miss' | 'coalesced';

export interface TokenVerifierParts {
  readonly config: Pick<VerifierConfig, 'issuers' | 'policies'>;
  /** Each issuer's verifier, by `iss`. */
  readonly verifiers: ReadonlyMap<string, IssuerVerifier>;
  readonly cache: TokenCache;
  readonly metrics?: Metrics | undefined;
  /** Whether the session claims are cached: only something (a revocation receiver) reads them. */
  readonly keepSession?: boolean | undefined;
  /**
   * Begins every cache key: a reload that changes an issuer's settings starts a new one, so a
   * verification still running under the old settings can never be found by the new ones.
   */
  readonly keyEpoch?: string | undefined;
  /**
   * Told each lookup's outcome, synchronously within the call (tracing's span attribute); left
   * unset without tracing, so the lookup does no more than before.
   */
  readonly onLookup?: ((lookup: CacheLookup) => void) | undefined;
}

/** What a policy's tokens need worked out once. */
interface Route {
  readonly issuers: ReadonlySet<string>;
  readonly jwtIssuers: ReadonlySet<string>;
  readonly opaque: IssuerVerifier | undefined;
  /**
   * Begins the cache keys of tokens this policy verifies (one for policies that read tokens
   * alike): the key epoch and the opaque issuer, empty when there is neither.
   */
  readonly keyPrefix: string;
}

/**
 * Cheapest first: the cache (a hit is checked against the asking policy's issuers), the Bearer
 * syntax and shape, a JWT's unverified `iss` (exact match, in the policy's list, before any key
 * fetch), then the issuer's full verification (jose checks `alg` before asking for a key).
 * Tokens that are not JWTs, or JWTs of no JWT issuer, go to the policy's opaque issuer if it has one.
 */
export function createTokenVerifier(parts: TokenVerifierParts): TokenVerifier {
  const { config, verifiers, cache, metrics, onLookup } = parts;
  const isJwt = (iss: string) => config.issuers.get(iss)?.type === 'jwt';
  const routes = new Map<string, Route>();
  for (const policy of config.policies.values()) {
    const opaqueIssuer = policy.issuers.find((iss) => !isJwt(iss));
    routes.set(policy.name, {
      issuers: new Set(policy.issuers),
      jwtIssuers: new Set(policy.issuers.filter(isJwt)),
      opaque: opaqueIssuer === undefined ? undefined : verifiers.get(opaqueIssuer),
      keyPrefix: `${parts.keyEpoch ?? ''}${opaqueIssuer ?? ''}`,
    });
  }
  const pending = new Map<string, Promise<VerifiedToken>>();
  /** The name concurrent misses of one token for one policy share. */
  const flightOf = (policy: PolicyConfig, key: string) => `${policy.name}\u0000${key}`;

  /**
   * `token` verified by the verifier that reads it for the policy, or the refusal of a token none
   * may read. A JWT's payload is decoded here once: its `iss` routes it, its claims are checked.
   */
  function route(token: string, policy: Route): VerifiedToken | Promise<VerifiedToken> {
    // Three base64url segments are b64token syntax already; only other shapes need the wider scan.
    if (!looksLikeJwt(token)) {
      assertBearerSyntax(token);
      if (policy.opaque) return policy.opaque(token);
      throw new VerifyError('token_malformed', 'the token is not three base64url segments');
    }
    const decoded = decodeClaims(token);
    // Some authorization servers hand out JWT-shaped tokens that only they can read.
    if (decoded === undefined) {
      if (policy.opaque) return policy.opaque(token);
      throw new VerifyError('token_malformed', 'the token payload is not valid JSON');
    }
    const iss = decoded.claims.iss;
    const issuer = typeof iss === 'string' ? config.issuers.get(iss) : undefined;
    if (issuer?.type !== 'jwt' && policy.opaque) return policy.opaque(token);
    if (typeof iss !== 'string') throw new VerifyError('issuer_unknown', '"iss" claim is missing');
    if (issuer === undefined)
      throw new VerifyError('issuer_unknown', '"iss" is not a configured issuer');
    if (!policy.jwtIssuers.has(iss))
      throw new VerifyError('issuer_not_allowed', '"iss" is not allowed by this policy');
    // Before any key lookup or crypto: one token has one spelling (token-shape.ts).
    if (!hasCanonicalSignature(token))
      throw new VerifyError(
        'token_malformed',
        'the signature is not canonical base64url (unused bits of its last character are set)',
      );
    return verifiers.get(iss)!(token, decoded);
  }

  /**
   * One verification's time into its histogram: performance.now() and one observe, where
   * prom-client's startTimer allocated ~330 bytes a call (two hrtime arrays, a closure, labels).
   */
  function timed(begun: number): void {
    metrics?.verification.observe((performance.now() - begun) / 1000);
  }

  /** Caches what a verification proved: the session claims only when something reads them. */
  function remember(key: string, fresh: VerifiedToken): VerifiedToken {
    cache.set(key, fresh, parts.keepSession === true);
    return fresh;
  }

  /**
   * Verifies now and caches what it proved. A token under a known key is verified before this
   * returns (no promise, no flight to share); else the flight is forgotten when it settles. One
   * `then` instead of an async function and a `finally`: each of those is a promise more.
   */
  function verifyFresh(token: string, policy: Route, key: string, policyConfig: PolicyConfig) {
    const begun = metrics === undefined ? 0 : performance.now();
    let started: VerifiedToken | Promise<VerifiedToken>;
    try {
      started = route(token, policy);
    } catch (error) {
      timed(begun);
      throw error;
    }
    if (!(started instanceof Promise)) {
      timed(begun);
      return remember(key, started);
    }
    const flight = flightOf(policyConfig, key);
    const settled = () => {
      pending.delete(flight);
      timed(begun);
    };
    const flying = started.then(
      (fresh) => {
        settled();
        return remember(key, fresh);
      },
      (error: unknown) => {
        settled();
        throw error;
      },
    );
    pending.set(flight, flying);
    return flying;
  }

  return function verifyToken(token, policyConfig) {
    const policy = routes.get(policyConfig.name)!;
    // The SHA-256 of the token alone, its 32 bytes as 32 characters ('binary': latin1), after
    // the policy's prefix: hashing `prefix + token` flattened a copy of the whole token on every
    // lookup, and base64url spent 11 characters more per key. The digest's fixed length keeps
    // the prefixes apart. One-shot `hash` builds no Hash object: half the cost of `createHash`.
    const digest = hash('sha256', token, 'binary');
    const key = policy.keyPrefix === '' ? digest : policy.keyPrefix + digest;
    const hit = cache.get(key);
    if (hit !== undefined) {
      metrics?.cacheLookup('hit');
      onLookup?.('hit');
      // Verified for another policy that reads tokens alike: this one may not accept its issuer.
      if (!policy.issuers.has(hit.identity.issuer))
        throw new VerifyError('issuer_not_allowed', '"iss" is not allowed by this policy');
      return hit;
    }
    metrics?.cacheLookup('miss');
    // Shared per policy too: a verification checks the asking policy's issuers before any fetch.
    // Nothing is in flight while every key is known: then no flight name is even built.
    const flight = pending.size === 0 ? undefined : flightOf(policyConfig, key);
    const running = flight === undefined ? undefined : pending.get(flight);
    if (running) {
      onLookup?.('coalesced');
      return running;
    }
    onLookup?.('miss');
    return verifyFresh(token, policy, key, policyConfig);
  };
}
