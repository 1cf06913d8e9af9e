// What /verify answers, as data: status, reason and the exact response headers (the contract in
// docs/architecture.md). Both transports write these headers verbatim and nothing else.
import { type DenyCode, statusFor } from './errors.js';
import { headerSafe, type Identity, scopeHeader } from './identity.js';
import { createInterner } from './intern.js';

export const REALM = 'secret-gate';

export type Header = readonly [name: string, value: string];

export interface Decision {
  readonly status: 204 | 401 | 403;
  readonly reason: 'allowed' | DenyCode;
  readonly headers: readonly Header[];
  /** Set when the token itself was accepted (allow, and 403 for missing scopes). */
  readonly identity: Identity | undefined;
  /** `cnf.jkt` of the accepted token when it is DPoP-bound (RFC 9449 §6). */
  readonly jkt?: string | undefined;
}

/**
 * Adds headers to an allow decision, e.g. the CloudFront signer's `X-Auth-CF-*` values. Runs on
 * every allowed request after the cache, so time-limited values are always fresh. It may only add
 * headers; a decorator that fails must return the decision it was given.
 */
export type DecisionDecorator = (decision: Decision) => Decision | Promise<Decision>;

// Header pairs for values many tokens share (client, scopes, issuer) are built once.
const sharedPair = createInterner<Header>(10_000);
const sharedScopes = createInterner<readonly string[]>(10_000);
const sharedString = createInterner<string>(10_000);

export function allow(identity: Identity): Decision {
  const scope = scopeHeader(identity.scopes);
  return {
    status: 204,
    reason: 'allowed',
    identity: compactIdentity(identity),
    headers: [
      ['X-Auth-Sub', headerSafe(identity.sub)],
      sharedPair(`c ${identity.client}`, () => ['X-Auth-Client', headerSafe(identity.client)]),
      sharedPair(`s ${scope}`, () => ['X-Auth-Scope', scope]),
      sharedPair(`i ${identity.issuer}`, () => ['X-Auth-Issuer', headerSafe(identity.issuer)]),
    ],
  };
}

/** One shared copy of a short string many cache entries hold (a `kid`, an issuer). */
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

/** A copy of `decision` with more headers; used by decorators. */
export function withHeaders(decision: Decision, headers: readonly Header[]): Decision {
  return { ...decision, headers: [...decision.headers, ...headers] };
}

const CHALLENGE_NO_TOKEN = `Bearer realm="${REALM}"`;
const CHALLENGE_INVALID = `Bearer realm="${REALM}", error="invalid_token"`;

/**
 * 401 carries `WWW-Authenticate` with `error="invalid_token"` only when a token was sent
 * (RFC 6750 §3.1). 403 carries `X-Auth-Challenge`, which NGINX copies into `WWW-Authenticate`
 * (NGINX passes `WWW-Authenticate` from an auth subrequest only on 401).
 */
export function deny(
  code: DenyCode,
  requiredScopes: readonly string[] = [],
  identity?: Identity,
): Decision {
  const status = statusFor(code);
  if (status === 401) {
    const challenge = code === 'token_missing' ? CHALLENGE_NO_TOKEN : CHALLENGE_INVALID;
    return {
      status,
      reason: code,
      identity: undefined,
      headers: [['WWW-Authenticate', challenge]],
    };
  }
  const scope =
    requiredScopes.length > 0 ? `, scope="${scopeHeader(requiredScopes).replace(/"/g, '')}"` : '';
  return {
    status,
    reason: code,
    identity: identity && compactIdentity(identity),
    headers: [['X-Auth-Challenge', `Bearer realm="${REALM}", error="insufficient_scope"${scope}`]],
  };
}

/**
 * A decision minus its subject: the part that thousands of cached tokens have in common (status,
 * reason, client, scopes, issuer and every header but `X-Auth-Sub`), stored once.
 */
export interface DecisionShape {
  readonly status: Decision['status'];
  readonly reason: Decision['reason'];
  readonly client: string;
  readonly scopes: readonly string[];
  readonly issuer: string;
  /** Headers after `X-Auth-Sub` (allow) or all headers (403). */
  readonly headers: readonly Header[];
  readonly hasSubHeader: boolean;
}

const sharedShape = createInterner<DecisionShape>(10_000);

/** Splits a decision with an identity into its subject and its shared shape. */
export function splitDecision(decision: Decision & { identity: Identity }): {
  sub: string;
  shape: DecisionShape;
} {
  const { identity } = decision;
  const hasSubHeader = decision.headers[0]?.[0] === 'X-Auth-Sub';
  const headers = hasSubHeader ? decision.headers.slice(1) : decision.headers;
  const key = JSON.stringify([
    decision.status,
    decision.reason,
    identity.client,
    identity.scopes,
    identity.issuer,
    headers,
  ]);
  const shape = sharedShape(key, () => ({
    status: decision.status,
    reason: decision.reason,
    client: identity.client,
    scopes: identity.scopes,
    issuer: identity.issuer,
    headers,
    hasSubHeader,
  }));
  return { sub: identity.sub, shape };
}

/** The decision `splitDecision` took apart; built per cache hit (a few short-lived objects). */
export function joinDecision(sub: string, shape: DecisionShape, jkt?: string): Decision {
  return {
    jkt,
    status: shape.status,
    reason: shape.reason,
    identity: { sub, client: shape.client, scopes: shape.scopes, issuer: shape.issuer },
    headers: shape.hasSubHeader
      ? [['X-Auth-Sub', headerSafe(sub)], ...shape.headers]
      : shape.headers,
  };
}
