// What /verify decided, as plain data (status codes and challenges are http/verify-answer.ts's),
// and what the decision path asks of its plugins, declared here so the arrows point inward: dpop/,
// revocation/ and cloudfront/ implement these, the core never imports them, service.ts wires them.
import type { EpochSeconds } from '../clock.js';
import type { DpopMode, PolicyConfig } from '../config/model.js';
import { VerifyError, type DenyCode } from '../errors.js';
import type { Identity } from '../token/identity.js';
import type { Credentials } from '../token/token-shape.js';
import type { VerifiedToken } from '../token/verified-token.js';

/** What NGINX sends to /verify; http/contract.ts has a row (header, meaning) for each field. */
export interface VerifyRequest {
  readonly authorization?: string | undefined;
  /** The `X-SG-Policy` header; `default` when absent. */
  readonly policy?: string | undefined;
  readonly originalUri?: string | undefined;
  readonly originalMethod?: string | undefined;
  readonly dpop?: string | undefined;
  readonly originalOrigin?: string | undefined;
  /** NGINX's W3C `traceparent` (SG_TRACE_CONTEXT=on): the trace this decision belongs to. */
  readonly traceparent?: string | undefined;
}

/** One answer header as a name/value pair, written to the wire as it is. */
export type Header = readonly [name: string, value: string];

export type Decision = (
  | { readonly outcome: 'allow'; readonly reason: 'allowed' }
  | { readonly outcome: 'deny'; readonly reason: DenyCode }
) & {
  /** Set when the token itself was accepted (an allow, a deny for its client or missing scopes). */
  readonly identity?: Identity | undefined;
  /** On a deny for missing scopes: the scopes the policy requires, for the challenge. */
  readonly requiredScopes?: readonly string[] | undefined;
  /** On an `insufficient_user_authentication` deny: what the RFC 9470 challenge asks for. */
  readonly stepUp?: StepUpChallenge | undefined;
  /** Whole seconds NGINX may reuse this answer (`X-Accel-Expires`); absent: never. */
  readonly edgeTtl?: number | undefined;
  /** Plugin-rendered headers, passed on unread: a grant, a DPoP nonce or `DPoP` challenge. */
  readonly headers?: readonly Header[] | undefined;
};

/** RFC 9470 §3: a new sign-in must meet `acrValues` (by preference) and be within `maxAge`. */
export interface StepUpChallenge {
  /** One of RFC 9470's own descriptions (decision/step-up.ts), never built from the token. */
  readonly description: string;
  readonly acrValues?: readonly string[] | undefined;
  /** Whole seconds. */
  readonly maxAge?: number | undefined;
}

export function allow(identity: Identity): Decision {
  return { outcome: 'allow', reason: 'allowed', identity };
}

/** A deny; `identity` (and `requiredScopes`) only when the token was accepted. */
export function deny(code: DenyCode, identity?: Identity, scopes?: readonly string[]): Decision {
  if (identity === undefined) return { outcome: 'deny', reason: code };
  return { outcome: 'deny', reason: code, identity, requiredScopes: scopes };
}

/** The same decision with more headers rendered by a plugin. */
export function withHeaders(decision: Decision, headers: readonly Header[]): Decision {
  if (headers.length === 0) return decision;
  return { ...decision, headers: [...(decision.headers ?? []), ...headers] };
}

/** Who a grant hands out to: the verified token and the access token it was read from. */
export interface GrantCaller {
  readonly token: VerifiedToken;
  /** The access token as sent; a grant may read its (verified) claims, never log it. */
  readonly raw: string;
}

/**
 * A policy's grant: what an allow hands out besides the identity, as ready answer headers. Called
 * on every allow (so time-limited values are fresh) with the time and the token's `exp` in epoch
 * seconds; nothing it hands out may outlive `exp`. A grant whose values are optional never throws
 * (what it cannot make is logged and left out, and the allow stands); one whose values are part of
 * the set (`perCaller`: minted values) throws a VerifyError instead, so no set goes out half-filled.
 */
export type Grant = ((
  now: EpochSeconds,
  exp: EpochSeconds,
  /** Always given by the decision path; a grant that names no one (CloudFront's) ignores it. */
  caller?: GrantCaller,
) => Promise<readonly Header[]>) & {
  /** Its headers belong to one caller: the answer is never reused at the edge. */
  readonly perCaller?: boolean;
};

/** The pushed-revocation check (RFC 8417 events, logout tokens), after the cache, every request. */
export type RevocationCheck = (
  token: Pick<VerifiedToken, 'identity' | 'session'>,
  mode: PolicyConfig['revocation'],
) => 'valid' | 'revoked' | 'unavailable';

/**
 * The DPoP step (RFC 9449 §7) of a policy whose `dpop` is not `off`, run for every accepted token,
 * cached or fresh, so a cached token never skips its proof.
 */
export interface DpopStep {
  /**
   * Checks the request's proof for the token (`jkt`: its `cnf.jkt`, undefined when unbound):
   * the headers an answer carries (`DPoP-Nonce`), or a DpopRefusal. Synchronous (returned or
   * thrown) when nothing has to wait, else a promise that resolves or rejects with them.
   */
  check(
    mode: Exclude<DpopMode, 'off'>,
    credentials: Credentials,
    request: VerifyRequest,
    jkt: string | undefined,
  ): readonly Header[] | Promise<readonly Header[]>;
  /**
   * A deny carrying the `DPoP` challenge, and `DPoP-Nonce` when `nonce` is given; with `stepUp`,
   * RFC 9470's parameters in that challenge.
   */
  challenge(code: DenyCode, nonce?: string, stepUp?: StepUpChallenge): Decision;
}

/** A refusal by the DPoP step: answered with its challenge and, when it asks for one, a nonce. */
export class DpopRefusal extends VerifyError {
  constructor(
    code: DenyCode,
    message: string,
    readonly nonce?: string,
  ) {
    super(code, message);
  }
}

/** What a route other than /verify answers (health, metrics, a revocation receiver). */
export interface Answer {
  readonly status: number;
  readonly headers: readonly Header[];
  readonly body: string;
}

/** A POST body as a receiver (revocation/) reads it. */
export interface ReceivedRequest {
  readonly contentType: string | undefined;
  readonly body: string;
  /** The client as NGINX names it (`X-SG-Client`), for the receivers' per-client limit. */
  readonly clientKey?: string | undefined;
  /** NGINX's W3C `traceparent` (SG_TRACE_CONTEXT=on): the parent of the receiver's span. */
  readonly traceparent?: string | undefined;
}

/**
 * A POST endpoint of a plugin: the body in, an answer out, at once (a refusal the request itself
 * shows) or once the token is checked.
 */
export type Receiver = (request: ReceivedRequest) => Answer | Promise<Answer>;

/** Bodies above this are refused by the transport before they reach a receiver. */
export const MAX_RECEIVER_BODY_BYTES = 16 * 1024;
