// What /verify decided, as plain data: the outcome, why, who the token speaks for, what the allow
// grants, and what the policy asked for. No HTTP here: verify-answer.ts renders a decision into
// status and headers at the transport edge, in one place.
import type { CloudFrontCookieGrant } from '../cloudfront/gate-decorator.js';
import type { DenyCode } from '../errors.js';
import type { Identity } from '../token/identity.js';
import { createInterner } from '../intern.js';
import type { SessionClaims } from '../revocation/subjects.js';

export type Reason = 'allowed' | DenyCode;

/** Something an allow hands out besides the identity (signed CloudFront cookies). */
export type Grant = CloudFrontCookieGrant;

export type Decision = (
  | { readonly outcome: 'allow'; readonly reason: 'allowed' }
  | { readonly outcome: 'deny'; readonly reason: DenyCode }
) & {
  /** Set when the token itself was accepted (allow, and a deny for missing scopes). */
  readonly identity: Identity | undefined;
  /** Empty except on allows of a policy with a plugin such as CloudFront. */
  readonly grants: readonly Grant[];
  /** The scopes the policy requires; named in the `insufficient_scope` challenge. */
  readonly requiredScopes: readonly string[];
  /**
   * On an allow, epoch seconds after which it no longer holds: the token's `exp` (or an opaque
   * answer's cache bound). Grants that outlive a request (CloudFront cookies) never go past it.
   */
  readonly expires: number | undefined;
  /**
   * Whole seconds NGINX may reuse this answer (`X-Accel-Expires`); 0 or absent: never. Set by the
   * authorizer from the cap, the token's `exp` and its key set's trust.
   */
  readonly edgeTtl?: number;
  /** Seconds since the epoch after which no copy of this decision may be used (exp, key trust). */
  readonly reusableUntil?: number;
  /** `cnf.jkt` of the accepted token when it is DPoP-bound (RFC 9449 §6). */
  readonly jkt?: string | undefined;
  /** The token's `iat`, `sid` and `email`, which pushed revocations are matched against. */
  readonly session?: SessionClaims | undefined;
  /** Set when the answer speaks DPoP (RFC 9449 §7): a `DPoP` challenge, a nonce to hand out. */
  readonly dpop?: DpopAnswer | undefined;
};

/** What a DPoP answer needs besides the reason: the proof algorithms, and a fresh server nonce. */
export interface DpopAnswer {
  /** Space-separated, for the challenge's `algs`. */
  readonly algs: string;
  /** Sent as `DPoP-Nonce` when nonces are on. */
  readonly nonce?: string | undefined;
}

/**
 * Adds grants to an allow decision, e.g. the CloudFront signer's cookies. Runs on every allowed
 * request after the cache, so time-limited values are always fresh. It may only add grants; a
 * decorator that fails must return the decision it was given.
 */
export type DecisionDecorator = (decision: Decision) => Decision | Promise<Decision>;

const NONE: readonly never[] = Object.freeze([]);
const sharedScopes = createInterner<readonly string[]>(10_000);
const sharedString = createInterner<string>(10_000);

export function allow(identity: Identity, expires: number): Decision {
  return {
    outcome: 'allow',
    reason: 'allowed',
    identity: compactIdentity(identity),
    grants: NONE,
    requiredScopes: NONE,
    expires,
  };
}

/** A deny; `identity` only when the token was accepted (missing scopes). */
export function deny(
  code: DenyCode,
  requiredScopes: readonly string[] = NONE,
  identity?: Identity,
): Decision {
  return {
    outcome: 'deny',
    reason: code,
    identity: identity && compactIdentity(identity),
    grants: NONE,
    requiredScopes,
    expires: undefined,
  };
}

/** A copy of an allow with one more grant; used by decorators. */
export function withGrant(decision: Decision, grant: Grant): Decision {
  return { ...decision, grants: [...decision.grants, grant] };
}

/** One shared copy of a short string many cache entries hold (a `kid`, an issuer, a policy). */
export function shared(value: string): string;
export function shared(value: string | undefined): string | undefined;
export function shared(value: string | undefined): string | undefined {
  return value === undefined ? undefined : sharedString(`v ${value}`, () => value);
}

/** The same identity with its common parts shared, for decisions that go into the cache. */
export function compactIdentity(identity: Identity): Identity {
  return {
    sub: identity.sub,
    client: sharedString(`c ${identity.client}`, () => identity.client),
    scopes: sharedScopes(identity.scopes.join(' '), () => Object.freeze([...identity.scopes])),
    issuer: sharedString(`i ${identity.issuer}`, () => identity.issuer),
  };
}
